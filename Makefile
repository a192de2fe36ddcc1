# The two commands a newcomer needs: `make run` and `make test`.
# Both build .venv/ from uv.lock when it is missing or older than the lock; `make install` does
# only that. uv is installed with pip (user site) when the machine lacks it.
SHELL := /bin/bash
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
VENV := .venv
STAMP := $(VENV)/.synced

.PHONY: install run test lint typecheck bench vectors clean

install: $(STAMP)

$(STAMP): uv.lock pyproject.toml
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet --user uv || $(PYTHON) -m pip install --quiet uv
	$(UV) sync --frozen
	@touch $(STAMP)

# Until the service lands, `make run` shows the CLI and validates the golden vectors with it.
run: $(STAMP)
	$(VENV)/bin/hearth --help
	$(VENV)/bin/hearth adds validate tests/vectors/*-*.json

test: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check --fix src tests bench
	$(VENV)/bin/ruff format src tests bench

typecheck: $(STAMP)
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(VENV)/bin/python bench/adds_verify.py

vectors: $(STAMP)
	$(VENV)/bin/python -m tests.vectors.generate

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
