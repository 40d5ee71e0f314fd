# strata — `make test` installs what it needs and runs every suite; `make bench` measures.
SHELL := /bin/bash
CARGO ?= cargo
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: all test test-rust test-python lint tour bench bench-rust bench-python fmt develop develop-release gpu-bundle array-api

all: test

test: lint test-rust test-python

# clippy builds the PyO3 crate, whose build script runs the venv's Python (VIRTUAL_ENV).
lint: $(VENV)/.ready
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The Python extension crate is a cdylib for CPython; its tests are the pytest suites.
# rustdoc links each doctest under TMPDIR: keep those binaries on target/'s disk, not /tmp.
# NVRTC from the venv (the nvidia-cuda-nvrtc wheel): the tests compile every generated CUDA
# kernel with it, no GPU needed.
NVRTC_LIB = $$(ls -d $(abspath $(VENV))/lib/python3*/site-packages/nvidia/cu*/lib 2>/dev/null | head -1)

test-rust: $(VENV)/.ready
	STRATA_REQUIRE_NVRTC=1 LD_LIBRARY_PATH=$(NVRTC_LIB):$${LD_LIBRARY_PATH:-} $(CARGO) test -p strata --lib --tests --examples
	mkdir -p target/tmp && TMPDIR=$(abspath target/tmp) $(CARGO) test -p strata --doc

# A virtualenv with the build and test tools (re-made when pyproject.toml changes).
$(VENV)/.ready: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet "maturin>=1.5,<2" "numpy>=1.26" "pytest>=7" "hypothesis>=6" "safetensors>=0.4" "mpmath>=1.3" "nvidia-cuda-nvrtc>=13,<14"
	touch $@

# Tests use a debug build: it shares the compiled core with `cargo test` and builds fast.
develop: $(VENV)/.ready
	$(VENV)/bin/maturin develop --quiet

develop-release: $(VENV)/.ready
	$(VENV)/bin/maturin develop --release --quiet

test-python: develop
	$(VPY) -m pytest python/tests -q

# The array API standard's test suite (data-apis/array-api-tests, a checkout with its
# array-api submodule) against strata.array_api, standard 2024.12; not part of `make test`
# (it needs that checkout): `make array-api ARRAY_API_TESTS=/path/to/array-api-tests`.
# Every dtype, complex included, and the linalg and fft extensions; anything expected to
# fail goes in python/array_api_xfails.txt with its cause (none with the suite's release
# 2026.02.26).
ARRAY_API_TESTS ?=
ARRAY_API_MAX_EXAMPLES ?= 100
array-api: develop
	@test -d "$(ARRAY_API_TESTS)/array_api_tests" && test -d "$(ARRAY_API_TESTS)/array-api/src" || \
		{ echo "usage: make array-api ARRAY_API_TESTS=/path/to/array-api-tests (with its array-api submodule)"; exit 2; }
	$(VPY) -m pip install --quiet ndindex pytest-json-report
	cd "$(ARRAY_API_TESTS)" && ARRAY_API_TESTS_MODULE=strata.array_api ARRAY_API_TESTS_VERSION=2024.12 \
		$(abspath $(VPY)) -m pytest array_api_tests -q -rfEX -p no:cacheprovider \
		--max-examples $(ARRAY_API_MAX_EXAMPLES) \
		--xfails-file $(abspath python/array_api_xfails.txt)

tour:
	$(CARGO) run --release --example tour

bench: bench-rust bench-python

bench-rust:
	$(CARGO) bench -p strata --bench engine
	$(CARGO) bench -p strata --bench core

# strata against NumPy (and PyTorch when installed) on the same data (a release build of
# the extension; 1 and 2 threads): the strided engine, then the compute-bound cases, then
# the memory footprint of a loop of large ops (resident memory, peak and after idling).
bench-python: develop-release
	$(VPY) python/bench/bench_numpy.py
	$(VPY) python/bench/bench_compute.py
	$(VPY) python/bench/bench_autograd.py
	$(VPY) python/bench/bench_memory.py

fmt:
	$(CARGO) fmt --all

# The GPU check's bundle (see README "CUDA"): the Python extension built for CPython 3.12
# (the GPU machine's; PyO3 takes the interpreter's facts from a config file, so no 3.12 is
# needed here) in release, the Rust GPU test binary (a debug build: it shares the compiled
# core with `make test`; its kernels run on the GPU either way), the GPU tests, the
# benchmark and run.sh, in one git-ignored folder under 64 MiB (the binaries stripped and
# gzipped; run.sh unpacks them). There: `./run.sh LOGDIR`.
GPU_BUNDLE ?= gpu-bundle
GPU_TARGET ?= target/gpu
gpu-bundle: $(VENV)/.ready
	rm -rf $(GPU_BUNDLE) && mkdir -p $(GPU_BUNDLE)/python $(GPU_BUNDLE)/tests $(GPU_BUNDLE)/bench $(GPU_TARGET)
	printf 'implementation=CPython\nversion=3.12\nshared=true\nabi3=false\npointer_width=64\nbuild_flags=\nsuppress_build_script_link_lines=false\n' > $(GPU_TARGET)/pyo3-cpython312.cfg
	PYO3_CONFIG_FILE=$(abspath $(GPU_TARGET))/pyo3-cpython312.cfg $(CARGO) build --release -p strata-py --features extension-module --target-dir $(GPU_TARGET)
	$(CARGO) test -p strata --test cuda_gpu --no-run --message-format=json \
		| $(PYTHON) -c 'import json,sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable") and m["target"]["name"] == "cuda_gpu"]' \
		| xargs -I{} cp {} $(GPU_BUNDLE)/cuda_gpu
	cp -r python/strata $(GPU_BUNDLE)/python/
	rm -f $(GPU_BUNDLE)/python/strata/*.so
	cp $(GPU_TARGET)/release/lib_strata.so $(GPU_BUNDLE)/python/strata/_strata.cpython-312-x86_64-linux-gnu.so
	strip --strip-unneeded $(GPU_BUNDLE)/cuda_gpu $(GPU_BUNDLE)/python/strata/_strata.cpython-312-x86_64-linux-gnu.so
	gzip -9 $(GPU_BUNDLE)/cuda_gpu $(GPU_BUNDLE)/python/strata/_strata.cpython-312-x86_64-linux-gnu.so
	cp -r python/tests/gpu $(GPU_BUNDLE)/tests/
	cp python/bench/bench_cuda.py $(GPU_BUNDLE)/bench/
	cp scripts/gpu_check.sh $(GPU_BUNDLE)/run.sh
	find $(GPU_BUNDLE) -name __pycache__ -prune -exec rm -rf {} +
	du -sh $(GPU_BUNDLE)
