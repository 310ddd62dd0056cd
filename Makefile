# Two commands set up a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
QUERY ?= how do I set up OAuth in Next.js?
VAULT ?= examples/sample-vault

.PHONY: demo test lint format benchmark bench clean help

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(VENV)/.installed $@

help:  ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

demo: $(VENV)/.installed  ## search the bundled sample vault
	$(BIN)/vaultsearch search --vault "$(VAULT)" --k 10 "$(QUERY)"

test: $(VENV)/.installed-dev  ## run the whole test suite
	$(BIN)/python -m pytest tests integration_tests -q -rs

lint: $(VENV)/.installed-dev  ## ruff, mypy and the layers' import contract
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(VENV)/.installed-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

benchmark: $(VENV)/.installed-dev  ## speed and memory against the LangChain baseline
	$(BIN)/python -m benchmarks.speed

BENCH_ARGS ?=
bench: $(VENV)/.installed-dev  ## large vaults: 1k/10k/100k notes, budgets 512 and 256 (BENCH_ARGS="--vault DIR")
	$(BIN)/python -m benchmarks.speed --sizes 1000,10000,100000 --budgets 512,256 --no-sample $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
