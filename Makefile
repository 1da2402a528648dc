# Two entry points for a new machine: `make demo` and `make test`.
# Both create the local virtual environment .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test fuzz lit pytest clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP)
	$(BIN)/python -m pytest
	$(BIN)/lit -sv test/filecheck

# A long fuzz campaign over every tool (not part of `make test`; a few minutes per thousand
# cases): prints the outcomes per category, exits 1 if any case hung, crashed or was messy.
FUZZ_CASES ?= 3000
FUZZ_SEED ?= 0
fuzz: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m xnpu.tools.fuzz --cases $(FUZZ_CASES) --seed $(FUZZ_SEED)

clean:
	rm -rf $(VENV) build *.egg-info
