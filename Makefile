# The two commands of the README: `make demo` and `make test`. `make docs` builds the site into
# site/, `make docs-test` also opens it in headless Chromium, `make dist` builds the wheel and sdist.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench peers obp clean docs docs-test dist

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,ray]"
	touch $(STAMP)

# make cannot change the calling shell: say how to reach the command line it installed
demo: $(STAMP)
	$(VENV)/bin/deepbandits demo --out results/demo --jobs 2
	@echo
	@echo "deepbandits is installed in $(VENV), which is not active in your shell: run"
	@echo "  source $(VENV)/bin/activate    # then: deepbandits list, deepbandits --help"
	@echo "or call it by its path: $(VENV)/bin/deepbandits list"

# one test worker per core, at most 4 (pytest-xdist); a file's tests stay on one worker, so
# their module fixtures (a Ray cluster, a served folder) are built once
test: $(STAMP)
	$(PY) -m pytest --numprocesses=auto --maxprocesses=4 --dist=loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples docs/hooks
	$(VENV)/bin/ruff format --check src tests benchmarks examples docs/hooks

bench: $(STAMP)
	$(PY) benchmarks/speed.py

# deepbandits against MABWiser, obp, contextualbandits, bayesianbandits and Vowpal Wabbit, in a
# venv of its own so that the test venv never holds the peers
PEERS_VENV := .venv-peers
$(PEERS_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet -e ".[peers]"
	touch $@

peers: $(PEERS_VENV)/.installed
	$(PEERS_VENV)/bin/python benchmarks/peers.py

# Open Bandit Pipeline 0.5.7 (the newest, with SLOPE-tuned Switch-DR and DRos, the sub-Gaussian
# estimators, MIPS and balanced IPW) for benchmarks/ope_obp.py, in a venv of its own: deepbandits
# is never installed there (its pandas and numpy are newer than obp's). The pinned set first, then
# obp with --no-deps --ignore-requires-python: its metadata says python < 3.11 and pins torch 1.12,
# which has no 3.11 wheel, yet its code runs on 3.11 with benchmarks/obp/requirements.txt (what
# benchmarks/ope_obp.py runs of it is checked there). Then: .venv/bin/python benchmarks/ope_obp.py
OBP_VENV := .venv-obp
$(OBP_VENV)/.installed: benchmarks/obp/requirements.txt
	$(PYTHON) -m venv $(OBP_VENV)
	$(OBP_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OBP_VENV)/bin/python -m pip install --quiet -r benchmarks/obp/requirements.txt
	$(OBP_VENV)/bin/python -m pip install --quiet --no-deps --ignore-requires-python obp==0.5.7
	$(OBP_VENV)/bin/python -c "import obp; assert obp.__version__ == '0.5.7', obp.__version__"
	touch $@

obp: $(OBP_VENV)/.installed

# The documentation site (mkdocs.yml; docs/about-these-docs.md says why these tools): the docs
# extra into .venv, then a strict build, in which any warning fails (a broken link, a public name
# without a docstring, an example that raises). The gallery runs every example in examples/.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install --quiet -e ".[dev,ray,docs]"
	touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 MPLBACKEND=Agg $(VENV)/bin/mkdocs build --strict

# Debian's chromium and its driver (a browser that a Python package downloads cannot be fetched
# on these machines), installed when missing (chromium-driver depends on chromium); then the
# browser test on the built site.
BROWSER := /usr/bin/chromedriver
$(BROWSER):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver

docs-test: docs | $(BROWSER)
	DEEPBANDITS_REQUIRE_BROWSER=1 $(PY) -m pytest -p no:cacheprovider tests/test_docs_browser.py

dist: $(DOCS_STAMP)
	$(PY) -m build --outdir dist

clean:
	rm -rf $(VENV) $(PEERS_VENV) $(OBP_VENV) results build dist site docs/generated src/*.egg-info
