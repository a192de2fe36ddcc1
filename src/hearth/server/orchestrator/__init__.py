"""The orchestrator of hosted runtimes (docs/orchestrator.md): the worker loop, leases in the
database, custody adapters, the LLM providers and the think cycle."""

from .worker import Worker

__all__ = ["Worker"]
