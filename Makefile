# Entry points for a new machine: `make demo` (xnpu and onnxruntime only) and `make test`
# (the test extras too: pytest, lit, FileCheck, IREE...). Both use the local virtual
# environment .venv, created on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test bytecode pytest lit quick blas-variance fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# the compiled loops (pyproject.toml's ext-modules): built again when their C changes
LOOP_SOURCES := semantics/fixed_point_loops.c transforms/calibrate_loops.c core/loop_arguments.h

$(DEMO_STAMP): pyproject.toml $(LOOP_SOURCES) | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[demo]'
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml $(LOOP_SOURCES) | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/python examples/demo.py
	@echo
	@echo "The tools are in $(BIN): '. $(BIN)/activate' puts them on PATH (README.md, 'Set up and try it')."

# The whole suite: pytest, lit + FileCheck, and the float tests again under another BLAS
# kernel. Every part runs whatever the others do; the last lines say which failed.
test: $(STAMP)
	@failed=""; \
	$(MAKE) --no-print-directory pytest || failed="$$failed pytest"; \
	$(MAKE) --no-print-directory lit || failed="$$failed lit"; \
	$(MAKE) --no-print-directory blas-variance || failed="$$failed blas-variance"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: pytest, lit and blas-variance passed"

# Where PYTHONDONTWRITEBYTECODE is set, Python reads bytecode but never writes it, so every
# tool process the tests start compiled xnpu's modules again (1.8 s of CPU for one xnpu-opt
# run on a clean clone against 0.75 s). Compiled here once, as pip does for what it installs;
# only files changed since are compiled again.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -x '/\.(venv|git)/' $(CURDIR)

# The suite runs one test (or tool process) per core already: OpenBLAS's second thread would
# only compete with the other worker and spin while it waits (pytest 349 s with two BLAS
# threads against 311 s with one on a clean clone). A value in the environment is kept.
OPENBLAS_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS

# the cases spread over the machine's cores (pytest-xdist), each test file on one worker (its
# module fixtures and caches are built once), the costliest files first (test/python/conftest.py
# LONGEST_FIRST, kept in that order); the ten slowest are listed
XDIST := -n auto --dist loadfile --no-loadscope-reorder
pytest: $(STAMP) bytecode
	$(BIN)/python -m pytest $(XDIST) --durations=10

lit: $(STAMP) bytecode
	$(BIN)/lit -sv test/filecheck

# For contributors: lit and the pytest cases not marked slow (the fuzz campaign,
# the hostile-input probes, the bench models' end-to-end runs: test/python/conftest.py).
quick: $(STAMP) bytecode
	$(BIN)/lit -s test/filecheck
	$(BIN)/python -m pytest $(XDIST) -m "not slow"

# Tests whose inputs went through float sums (calibration, float interpreters against
# recorded figures), run again with another OpenBLAS kernel, one BLAS thread and numpy's
# baseline SIMD loops: a test that holds only for one summation order fails here, on this
# machine, before it fails on the next one (docs/reliability.md). Only the files that mark
# tests float_sums are collected (collecting every file costs each worker ~4 s more).
BLAS_VARIANT := OPENBLAS_CORETYPE=Sandybridge OPENBLAS_NUM_THREADS=1 NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4"
FLOAT_SUM_FILES = $(shell grep -rl --include='test_*.py' float_sums test/python | sort)
blas-variance: $(STAMP) bytecode
	$(BLAS_VARIANT) $(BIN)/python -m pytest $(XDIST) -m float_sums -p no:cacheprovider $(FLOAT_SUM_FILES)

# A long fuzz campaign over every tool (not part of `make test`; a few minutes per thousand
# cases): prints the outcomes per category, exits 1 if any case hung, crashed or was messy.
FUZZ_CASES ?= 3000
FUZZ_SEED ?= 0
fuzz: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m xnpu.tools.fuzz --cases $(FUZZ_CASES) --seed $(FUZZ_SEED)

clean:
	rm -rf $(VENV) build *.egg-info semantics/*.so transforms/*.so
