"""The orchestrator of hosted runtimes (docs/orchestrator.md): the worker loop, custody adapters,
the LLM providers and the think cycle. Its leases in the database are the runtimes service's
(``services.runtimes.leases``), as is every other write of a runtime's record."""

from .worker import Worker

__all__ = ["Worker"]
