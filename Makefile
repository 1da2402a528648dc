# Two entry points for a new machine: `make demo` and `make test`.
# Both create the local virtual environment .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test pytest lit blas-variance fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# The whole suite: pytest, lit + FileCheck, and the float tests again under another BLAS
# kernel. Every part runs whatever the others do; the last lines say which failed.
test: $(STAMP)
	@failed=""; \
	$(MAKE) --no-print-directory pytest || failed="$$failed pytest"; \
	$(MAKE) --no-print-directory lit || failed="$$failed lit"; \
	$(MAKE) --no-print-directory blas-variance || failed="$$failed blas-variance"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: pytest, lit and blas-variance passed"

# the cases spread over the machine's cores (pytest-xdist), each test file on one worker
pytest: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadfile

lit: $(STAMP)
	$(BIN)/lit -sv test/filecheck

# Tests whose inputs went through float sums (calibration, float interpreters against
# recorded figures), run again with another OpenBLAS kernel, one BLAS thread and numpy's
# baseline SIMD loops: a test that holds only for one summation order fails here, on this
# machine, before it fails on the next one (docs/reliability.md).
BLAS_VARIANT := OPENBLAS_CORETYPE=Sandybridge OPENBLAS_NUM_THREADS=1 NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4"
blas-variance: $(STAMP)
	$(BLAS_VARIANT) $(BIN)/python -m pytest -n auto --dist loadfile -m float_sums -p no:cacheprovider

# A long fuzz campaign over every tool (not part of `make test`; a few minutes per thousand
# cases): prints the outcomes per category, exits 1 if any case hung, crashed or was messy.
FUZZ_CASES ?= 3000
FUZZ_SEED ?= 0
fuzz: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m xnpu.tools.fuzz --cases $(FUZZ_CASES) --seed $(FUZZ_SEED)

clean:
	rm -rf $(VENV) build *.egg-info
