# strata — `make test` installs what it needs and runs every suite; `make bench` measures.
SHELL := /bin/bash
CARGO ?= cargo
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: all test test-rust test-python lint tour bench bench-rust bench-python fmt develop develop-release

all: test

test: lint test-rust test-python

# clippy builds the PyO3 crate, whose build script runs the venv's Python (VIRTUAL_ENV).
lint: $(VENV)/.ready
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The Python extension crate is a cdylib for CPython; its tests are the pytest suites.
# rustdoc links each doctest under TMPDIR: keep those binaries on target/'s disk, not /tmp.
test-rust:
	$(CARGO) test -p strata --lib --tests --examples
	mkdir -p target/tmp && TMPDIR=$(abspath target/tmp) $(CARGO) test -p strata --doc

# A virtualenv with the build and test tools (re-made when pyproject.toml changes).
$(VENV)/.ready: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet "maturin>=1.5,<2" "numpy>=1.26" "pytest>=7" "hypothesis>=6" "safetensors>=0.4" "mpmath>=1.3"
	touch $@

# Tests use a debug build: it shares the compiled core with `cargo test` and builds fast.
develop: $(VENV)/.ready
	$(VENV)/bin/maturin develop --quiet

develop-release: $(VENV)/.ready
	$(VENV)/bin/maturin develop --release --quiet

test-python: develop
	$(VPY) -m pytest python/tests -q

tour:
	$(CARGO) run --release --example tour

bench: bench-rust bench-python

bench-rust:
	$(CARGO) bench -p strata --bench engine
	$(CARGO) bench -p strata --bench core

# strata against NumPy (and PyTorch when installed) on the same data (a release build of
# the extension; 1 and 2 threads): the strided engine, then the compute-bound cases.
bench-python: develop-release
	$(VPY) python/bench/bench_numpy.py
	$(VPY) python/bench/bench_compute.py

fmt:
	$(CARGO) fmt --all
