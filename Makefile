# routebr-kit — every target creates .venv on first use (Python 3.11 + pip only).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
KIT    := $(VENV)/bin/routebr-kit
STAMP  := $(VENV)/.installed
ARTIFACT ?=
PARAMS ?= params/default.yaml

export MPLBACKEND := Agg
export PYTHONHASHSEED := 0

.PHONY: help venv test test-fast lint reproduce lab kernel bench notebooks clean

help:
	@echo "make reproduce [ARTIFACT=../shared/routebr_artifact]  run every notebook offline into outputs/<run_id>/"
	@echo "make test                                              unit, property, golden and notebook (nbval) tests"
	@echo "make lab                                               register the kernel and open JupyterLab"
	@echo "make bench                                             print the benchmark figures"
	@echo "make notebooks                                         re-execute the committed notebooks in place"
	@echo "make lint                                              ruff"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

venv: $(STAMP)

test: $(STAMP)
	TQDM_DISABLE=1 $(PY) -m pytest tests notebooks --nbval-lax --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

test-fast: $(STAMP)
	TQDM_DISABLE=1 $(PY) -m pytest tests -q -p no:cacheprovider

reproduce: $(STAMP)
	$(KIT) reproduce --params $(PARAMS) $(if $(ARTIFACT),--artifact $(ARTIFACT))

kernel: $(STAMP)
	$(PY) -m ipykernel install --user --name routebr-kit --display-name "Python (routebr-kit)"

lab: kernel
	$(VENV)/bin/jupyter lab notebooks/

lint: $(STAMP)
	$(VENV)/bin/ruff check routebr_kit tests benchmarks tools

bench: $(STAMP)
	$(PY) benchmarks/bench_controller.py
	$(PY) benchmarks/bench_tables.py
	$(PY) benchmarks/bench_generate.py
	$(PY) benchmarks/bench_offline_backends.py
	$(PY) benchmarks/bench_metaroute.py
	$(PY) benchmarks/bench_runner.py --calls 320 --concurrency 8,32

notebooks: $(STAMP)
	$(PY) tools/refresh_notebooks.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
