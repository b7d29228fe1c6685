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

.PHONY: help venv test test-fast reproduce lab kernel bench clean

help:
	@echo "make reproduce [ARTIFACT=../shared/routebr_artifact]  run every notebook offline into outputs/<run_id>/"
	@echo "make test                                              unit, property, golden and notebook (nbval) tests"
	@echo "make lab                                               register the kernel and open JupyterLab"
	@echo "make bench                                             print the benchmark figures"

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

bench: $(STAMP)
	$(PY) benchmarks/bench_controller.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
