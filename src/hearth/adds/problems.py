"""What validation reports: problems with a JSON pointer, a stable code and a plain message.

Codes are dotted and start with where the rule comes from, so that a reader can tell a breach of
the ADDS 0.1 specification (``spec.``) from a breach of hearth's profile of it (``profile.``,
DESIGN.md section 3). The full list lives in ``docs/adds.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["AddsError", "Problem", "join_pointer"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a document, at ``pointer`` (RFC 6901, "" for the whole document)."""

    pointer: str
    code: str
    message: str

    @property
    def source(self) -> str:
        """``spec`` or ``profile``: which set of rules was broken."""
        return self.code.split(".", 1)[0]

    def as_dict(self) -> dict[str, str]:
        return {"pointer": self.pointer, "code": self.code, "message": self.message}


class AddsError(ValueError):
    """A value refused by one of the strict codecs or by signing; carries its problems."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "; ".join(f"{p.code} at '{p.pointer}': {p.message}" for p in self.problems)
        )

    @classmethod
    def single(cls, code: str, message: str, pointer: str = "") -> AddsError:
        return cls([Problem(pointer, code, message)])


def _escape(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def join_pointer(base: str, token: str | int) -> str:
    """Append one reference token to an RFC 6901 JSON pointer."""
    return f"{base}/{_escape(token)}"
