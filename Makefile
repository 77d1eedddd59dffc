# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench peers clean

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

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

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

clean:
	rm -rf $(VENV) $(PEERS_VENV) results build src/*.egg-info
