# strata — `make test` installs what it needs and runs every suite; `make bench` measures.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: all test test-rust lint tour bench fmt

all: test

test: lint test-rust

test-rust:
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

tour:
	$(CARGO) run --release --example tour

bench:
	$(CARGO) bench -p strata --bench core

fmt:
	$(CARGO) fmt --all
