# The two commands a newcomer needs: `make run` and `make test`.
# Both build .venv/ from uv.lock when it is missing or older than the lock; `make install` does
# only that. uv is the machine's when it has one (on PATH, or as PYTHON's module); otherwise it
# is installed with pip into a private venv, .uv/, so that an "externally managed" interpreter
# (PEP 668: Debian's and Ubuntu's python3, where `pip install --user` is refused) works as well
# as any other and nothing is written outside this folder. .venv/ is made for PYTHON itself, and
# uv never downloads a Python of its own. The dependencies' bytecode is compiled once at install:
# a Python that may not write it (PYTHONDONTWRITEBYTECODE, as on the CI machines) otherwise
# compiles typer, rich and the rest at every start of every `hearth` process
# (bench/cli_start.py, docs/performance.md).
SHELL := /bin/bash
PYTHON ?= python3
PRIVATE_UV := .uv/bin/uv
UV := $(shell command -v uv 2>/dev/null || ($(PYTHON) -m uv --version >/dev/null 2>&1 && echo "$(PYTHON) -m uv") || echo $(PRIVATE_UV))
VENV := .venv
STAMP := $(VENV)/.synced

# pytest-xdist: one worker per core (PYTEST_WORKERS=0 runs in one process), a test module's tests
# on one worker so that its module-scoped services start once (docs/performance.md, "The suite").
PYTEST_WORKERS ?= auto

.PHONY: install run test lint typecheck bench vectors clean

install: $(STAMP)

$(STAMP): uv.lock pyproject.toml $(filter $(PRIVATE_UV),$(UV))
	UV_PYTHON_DOWNLOADS=never $(UV) sync --frozen --compile-bytecode --python "$$(command -v $(PYTHON))"
	@touch $(STAMP)

$(PRIVATE_UV):
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || { echo "$(PYTHON) has no venv/ensurepip module: install your distribution's venv package (Debian and Ubuntu: apt-get install python3-venv), or uv, then run make again" >&2; exit 1; }
	$(PYTHON) -m venv .uv
	.uv/bin/python -m pip install --quiet --disable-pip-version-check uv

# Serves on 127.0.0.1:8000 with a SQLite file (var/hearth.sqlite3), created and migrated on first
# start; the project's own wheel is built into var/dist for package discovery.
HOST ?= 127.0.0.1
PORT ?= 8000
run: $(STAMP)
	$(VENV)/bin/python -m hearth.server.packages build var/dist
	$(VENV)/bin/hearth serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	@# The import contracts of pyproject.toml (docs/architecture.md); half a second, no cache kept.
	$(VENV)/bin/lint-imports --no-cache
	@# hearth's own bytecode too: the suite starts hundreds of hearth processes.
	@$(VENV)/bin/python -m compileall -q src >/dev/null
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check --fix src tests bench
	$(VENV)/bin/ruff format src tests bench

typecheck: $(STAMP)
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(VENV)/bin/python bench/adds_verify.py
	$(VENV)/bin/python bench/arrival.py
	$(VENV)/bin/python bench/adds_throughput.py
	$(VENV)/bin/python bench/mixed.py  # PostgreSQL and Redis (SERVICE_TEST_DATABASE_URL)
	$(VENV)/bin/python bench/cli_start.py

vectors: $(STAMP)
	$(VENV)/bin/python -m tests.vectors.generate

clean:
	rm -rf $(VENV) .uv .mypy_cache .pytest_cache .ruff_cache
