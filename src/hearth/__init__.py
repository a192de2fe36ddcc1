"""hearth: a durable home for AI agents' identities and data."""

from __future__ import annotations

# Looked up on first use (PEP 562), not at import: ``importlib.metadata`` costs about 35 ms,
# a seventh of the ``hearth --help`` budget, and only ``--version`` and the server read it.
__version__: str

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        found = version("hearth")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0.0.0"
    globals()["__version__"] = found
    return found
