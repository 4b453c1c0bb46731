# kafka-chaos: every target does its own set-up (venv, Docker engine, images), so each works on a fresh machine.
SHELL := /bin/bash
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
KAFKA ?=
SUPPORTED := 4.4.0,3.9.2
export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: setup chaos nightly test test-all unit integration lint bench detect compare clean

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

setup: $(VENV)/.installed
	$(BIN)/kchaos setup --kafka $(SUPPORTED)

chaos: setup  ## the smoke suite on the default Kafka version
	$(BIN)/kchaos suite smoke $(if $(KAFKA),--kafka $(KAFKA))

nightly: setup  ## the whole catalog x 3 seeds x the supported versions, longer runs
	$(BIN)/kchaos compare --kafka $(SUPPORTED) --suite nightly --seeds 3 --duration 120s

compare: setup
	$(BIN)/kchaos compare --kafka $(SUPPORTED) --suite smoke

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports

unit: $(VENV)/.installed
	$(BIN)/pytest -q tests/unit

integration: setup
	$(BIN)/pytest -q tests/integration

test: lint setup  ## the CI tier: every layer on real brokers, within 30 minutes from a fresh clone
	$(BIN)/pytest -q --durations=40 -m "not slow" tests

test-all: lint setup  ## every test: the CI tier, then old releases, known bugs, five brokers, ZooKeeper faults
	$(BIN)/pytest -q --durations=25 tests
	$(BIN)/python -m tests.mutate  # every curated mutant of the checkers and rules must fail the analyzer's tests

bench: setup
	$(BIN)/python -m bench.run

detect: setup
	$(BIN)/python -m bench.detect

clean:
	-$(BIN)/kchaos clean
