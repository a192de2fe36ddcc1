"""Heads: which manifest a publisher's head points to now, and whether its history forked.

A head is one signed pointer; its history is the set of heads with the same ``head_id`` signed by
the same key (DESIGN.md section 3). ``resolve_heads`` sorts any collection of documents into those
histories and names the current head of each: the valid head with the highest ``sequence``. Two
valid heads with that sequence and different CIDs are a fork; it is reported (``forked``, every
``candidate``), never hidden and never broken by a rule of thumb: the publisher resolves it by
publishing a head that names every candidate as a parent (``next_head`` does).

Histories are keyed by the issuer's Ed25519 public key, not by ``issuer.id``. The binding of an
id to a key is external to ADDS, so anyone can sign a head that claims someone else's id; keyed
by id, such a head would join (and could fork or overtake) the real history. Keyed by the signing
key, it forms a history of its own, and the caller decides whether it trusts that key for that id.

Resolution never looks at the clock; ``updated_at`` is the caller's to filter on. The first head
of a history has sequence 0 (the specification allows any uint53; the vectors start at 0).

The input handling shared with ``hearth.adds.providers`` lives here too: a document may be given
as bytes, as a parsed mapping or as a SignedDocument, and each is validated again, since only a
valid document takes part in resolution. Documents that are not admitted come back in
``Resolutions.rejected`` with their problems.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from . import ed25519
from .b64 import b64url_decode, b64url_encode
from .builders import SignedDocument, build_head
from .canonical import CanonicalizationError, canonicalize
from .cid import cid_for_bytes
from .ijson import MAX_SAFE_INTEGER
from .kinds import SIGNER_MEMBER
from .problems import AddsError, Problem
from .validate import ValidationResult, validate

__all__ = [
    "DocumentInput",
    "HeadResolution",
    "Rejected",
    "Resolutions",
    "admit_documents",
    "next_head",
    "resolve_heads",
    "signer_key",
]

DocumentInput = SignedDocument | Mapping[str, Any] | bytes

# The code of a valid document given where documents of another kind are resolved.
WRONG_KIND = "profile.resolve.kind"


@dataclass(frozen=True, slots=True)
class Rejected:
    """A document that took no part in resolution: ``index`` is its position in the input,
    ``cid`` and ``kind`` are given when it parsed, ``problems`` say why it was refused."""

    index: int
    cid: str | None
    kind: str | None
    problems: tuple[Problem, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "cid": self.cid,
            "kind": self.kind,
            "problems": [p.as_dict() for p in self.problems],
        }


class _Json(Protocol):
    def as_json(self) -> dict[str, Any]: ...


_R = TypeVar("_R", bound=_Json)


class Resolutions(list[_R]):
    """The resolutions, one per history, plus ``rejected``: every input that was not a valid
    document of the kind being resolved (it is a list, so it can be used as one)."""

    __slots__ = ("rejected",)

    def __init__(self, resolutions: Iterable[_R] = (), rejected: Iterable[Rejected] = ()) -> None:
        super().__init__(resolutions)
        self.rejected: tuple[Rejected, ...] = tuple(rejected)

    def as_json(self) -> dict[str, Any]:
        return {
            "resolutions": [r.as_json() for r in self],
            "rejected": [r.as_json() for r in self.rejected],
        }


def _result(document: DocumentInput) -> ValidationResult:
    if isinstance(document, SignedDocument):
        # The canonical bytes are what the CID names, so they are what is checked.
        return validate(document.canonical)
    if isinstance(document, bytes | bytearray | memoryview):
        return validate(bytes(document))
    if isinstance(document, Mapping):
        try:
            data = canonicalize(dict(document))
        except CanonicalizationError as exc:
            problem = Problem("", "spec.ijson.syntax", f"not representable as I-JSON: {exc}")
            return ValidationResult(None, None, (problem,))
        # Through the strict parser, so a mapping meets exactly the rules bytes meet.
        return validate(data)
    problem = Problem(
        "", "spec.type", "a document is given as bytes, a mapping or a SignedDocument"
    )
    return ValidationResult(None, None, (problem,))


def admit_documents(
    documents: Iterable[DocumentInput],
) -> tuple[list[tuple[int, SignedDocument]], list[Rejected]]:
    """Validate each document: (index, document) for the valid ones, of any kind, in input
    order, and a Rejected for each of the others."""
    admitted: list[tuple[int, SignedDocument]] = []
    rejected: list[Rejected] = []
    for index, document in enumerate(documents):
        result = _result(document)
        if result.valid:
            canonical = canonicalize(result.document, simple=result.simple)
            admitted.append(
                (index, SignedDocument(result.document, canonical, cid_for_bytes(canonical)))
            )
        else:
            rejected.append(Rejected(index, result.cid, result.kind, result.errors))
    return admitted, rejected


def signer_key(document: SignedDocument) -> bytes:
    """The raw Ed25519 public key of a valid document's signer."""
    signer = document.document[SIGNER_MEMBER[document.kind]]
    return b64url_decode(signer["ed25519_public_key"])


def split_by_kind(
    admitted: Iterable[tuple[int, SignedDocument]], kind: str, rejected: list[Rejected]
) -> list[SignedDocument]:
    """The admitted documents of ``kind``, without repeats of one CID; the others are added to
    ``rejected`` (a valid document of another kind is not part of any history here)."""
    chosen: dict[str, SignedDocument] = {}
    for index, document in admitted:
        if document.kind == kind:
            chosen.setdefault(document.cid, document)
        else:
            message = f"a {document.kind} document, where {kind} documents are resolved"
            rejected.append(
                Rejected(
                    index, document.cid, document.kind, (Problem("/kind", WRONG_KIND, message),)
                )
            )
    rejected.sort(key=lambda r: r.index)
    return list(chosen.values())


@dataclass(frozen=True, slots=True)
class Tiers:
    """The documents of one history by sequence: the top tier and the lower tiers that hold
    more than one document."""

    top: tuple[SignedDocument, ...]
    sequence: int
    split_below: tuple[int, ...]


def tiers(history: Iterable[SignedDocument]) -> Tiers:
    """Group one history (distinct CIDs) by sequence; the top tier is sorted by CID."""
    by_sequence: dict[int, list[SignedDocument]] = {}
    for document in history:
        by_sequence.setdefault(document.document["sequence"], []).append(document)
    sequence = max(by_sequence)
    top = tuple(sorted(by_sequence[sequence], key=lambda d: d.cid))
    split_below = tuple(s for s in sorted(by_sequence) if s != sequence and len(by_sequence[s]) > 1)
    return Tiers(top, sequence, split_below)


def _head_summary(document: SignedDocument) -> dict[str, Any]:
    return {
        "cid": document.cid,
        "sequence": document.document["sequence"],
        "manifest_cid": document.document["manifest_cid"],
        "parents": list(document.document["parents"]),
        "updated_at": document.document["updated_at"],
    }


@dataclass(frozen=True, slots=True)
class HeadResolution:
    """The state of one head history: one ``head_id`` under one issuer key.

    ``candidates`` are the valid heads at the highest sequence, sorted by CID. With one
    candidate it is ``current``; with more the history is ``forked`` and ``current`` is None.
    ``history_forks`` are the lower sequences that hold more than one head (forks that may have
    been merged since). ``missing_parents`` are the parents the candidates name that were not
    among the valid documents given (informational: history may simply be pruned).
    ``issuer_id`` is the id the first candidate claims; ids are not checked against the key here.
    """

    issuer_id: str
    issuer_key: bytes
    head_id: str
    current: SignedDocument | None
    candidates: tuple[SignedDocument, ...]
    forked: bool
    history_forks: tuple[int, ...]
    missing_parents: tuple[str, ...]

    @property
    def sequence(self) -> int:
        """The highest sequence in the history."""
        return int(self.candidates[0].document["sequence"])

    @property
    def manifest_cid(self) -> str | None:
        """The manifest the current head points to; None when forked."""
        return None if self.current is None else str(self.current.document["manifest_cid"])

    def as_json(self) -> dict[str, Any]:
        return {
            "issuer_id": self.issuer_id,
            "issuer_key": b64url_encode(self.issuer_key),
            "head_id": self.head_id,
            "sequence": self.sequence,
            "current": None if self.current is None else _head_summary(self.current),
            "forked": self.forked,
            "candidates": [_head_summary(c) for c in self.candidates],
            "history_forks": list(self.history_forks),
            "missing_parents": list(self.missing_parents),
        }


def resolve_heads(
    documents: Iterable[DocumentInput],
    *,
    head_id: str | None = None,
    issuer_key: bytes | None = None,
) -> Resolutions[HeadResolution]:
    """Resolve every head history found in ``documents``, or only those with ``head_id`` and/or
    ``issuer_key`` (raw 32 bytes).

    Histories are keyed by (issuer Ed25519 key, ``head_id``), never by ``issuer.id`` alone (see
    the module docstring), and come back sorted by that key. Every document that is not a valid
    head is in ``rejected``, whatever the filters.
    """
    admitted, rejected = admit_documents(documents)
    present = {document.cid for _, document in admitted}
    histories: dict[tuple[bytes, str], list[SignedDocument]] = {}
    for head in split_by_kind(admitted, "head", rejected):
        signer, name = signer_key(head), str(head.document["head_id"])
        if (issuer_key is None or signer == issuer_key) and (head_id is None or name == head_id):
            histories.setdefault((signer, name), []).append(head)
    resolutions = []
    for (key, history_id), history in sorted(histories.items()):
        grouped = tiers(history)
        parents = {p for head in grouped.top for p in head.document["parents"]}
        resolutions.append(
            HeadResolution(
                issuer_id=str(grouped.top[0].document["issuer"]["id"]),
                issuer_key=key,
                head_id=history_id,
                current=grouped.top[0] if len(grouped.top) == 1 else None,
                candidates=grouped.top,
                forked=len(grouped.top) > 1,
                history_forks=grouped.split_below,
                missing_parents=tuple(sorted(parents - present)),
            )
        )
    return Resolutions(resolutions, rejected)


def next_head(
    *,
    key: Ed25519PrivateKey,
    issuer_id: str,
    head_id: str,
    manifest_cid: str,
    previous: Iterable[DocumentInput] = (),
    updated_at: int,
    extensions: Mapping[str, Any] | None = None,
) -> SignedDocument:
    """The head that follows ``previous`` in the history of (``key``, ``head_id``).

    Its sequence is one more than the highest in that history, or 0 for the first head. Its
    parents are the current head, or every candidate of a fork, so publishing it merges the fork.
    Heads of other histories in ``previous`` are ignored; anything in it that is not a valid head
    raises AddsError with the problems, since a history that cannot be read cannot be continued
    safely (a head built on part of it could reuse a sequence).
    """
    resolutions = resolve_heads(previous, head_id=head_id, issuer_key=ed25519.public_key_raw(key))
    if resolutions.rejected:
        raise AddsError(
            Problem(f"/{r.index}{p.pointer}", p.code, p.message)
            for r in resolutions.rejected
            for p in r.problems
        )
    if resolutions and resolutions[0].sequence >= MAX_SAFE_INTEGER:
        raise AddsError.single(
            "spec.range", "the history has reached the largest sequence a uint53 holds", "/sequence"
        )
    if resolutions:
        sequence = resolutions[0].sequence + 1
        parents = [c.cid for c in resolutions[0].candidates]
    else:
        sequence, parents = 0, []
    return build_head(
        key=key,
        issuer_id=issuer_id,
        head_id=head_id,
        sequence=sequence,
        manifest_cid=manifest_cid,
        parents=parents,
        updated_at=updated_at,
        extensions=extensions,
    )
