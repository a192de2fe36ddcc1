"""Provider records and receipts where they are used: which record is current, where a block
can be fetched from, what a provider holds and what it has committed to keep.

For one provider key and one ``record_id`` the valid record with the highest ``sequence`` wins
(DESIGN.md section 3); two valid records with that sequence and different CIDs are a conflict,
reported with every candidate and no winner. Like heads (``hearth.adds.heads``), records are
grouped by the provider's Ed25519 key, not by ``provider.id``, whose binding to a key is external
to ADDS.

``supersedes`` names the record a record replaces. Each link of the winner's chain is checked
against the documents given: the record it names must be a provider record of the same key with
a lower sequence. A link to a record that was not given is not a problem (``superseded`` is None);
a link to a higher or equal sequence, another provider or another kind is. A winner that a record
of the same key names in ``supersedes`` is listed in ``superseded_by`` (a record may be replaced
under a new ``record_id``).

Time windows are checked here, where records and receipts are used, never in validation: a
record is in force while ``issued_at`` <= now < ``expires_at``, a receipt while ``issued_at`` <=
now < ``retention_until``.

Endpoint templates are expanded by ``expand_template``, RFC 6570 level 4 for string values (the
only kind ADDS needs: ``cid`` is the one variable a block URL defines; every other variable is
undefined and expands to nothing). The ``uri-template`` package is a test dependency only and is
not used on this path (see ``hearth.adds.uritemplates`` for why); the tests compare the two.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .b64 import b64url_encode
from .builders import SignedDocument
from .cid import cid_problem
from .heads import (
    WRONG_KIND,
    DocumentInput,
    Resolutions,
    admit_documents,
    signer_key,
    split_by_kind,
    tiers,
)
from .problems import AddsError, Problem
from .uritemplates import template_problem

__all__ = [
    "ProviderResolution",
    "block_urls",
    "expand_template",
    "receipt_covers",
    "receipt_in_force",
    "record_holds",
    "record_in_force",
    "resolve_provider_records",
]

# ---------------------------------------------------------------------------------------------
# RFC 6570 expansion (string values)
# ---------------------------------------------------------------------------------------------

_RESERVED = ":/?#[]@!$&'()*+,;="
_TRIPLET = re.compile(r"(%[0-9A-Fa-f]{2})")
_EXPRESSION = re.compile(r"\{([^}]*)\}")


@dataclass(frozen=True, slots=True)
class _Operator:
    """RFC 6570 appendix A: how an operator joins and encodes its values."""

    first: str
    separator: str
    named: bool
    if_empty: str
    allow_reserved: bool


_OPERATORS = {
    "": _Operator("", ",", False, "", False),
    "+": _Operator("", ",", False, "", True),
    "#": _Operator("#", ",", False, "", True),
    ".": _Operator(".", ".", False, "", False),
    "/": _Operator("/", "/", False, "", False),
    ";": _Operator(";", ";", True, "", False),
    "?": _Operator("?", "&", True, "=", False),
    "&": _Operator("&", "&", True, "=", False),
}


def _encode_reserved(text: str) -> str:
    """Keep unreserved and reserved characters and pct-encoded triplets; encode the rest."""
    return "".join(
        piece if _TRIPLET.fullmatch(piece) else quote(piece, safe=_RESERVED)
        for piece in _TRIPLET.split(text)
    )


def _expression(body: str, values: Mapping[str, str]) -> str:
    operator = _OPERATORS[body[0]] if body[0] in _OPERATORS else _OPERATORS[""]
    varlist = body[1:] if body[0] in _OPERATORS else body
    parts = []
    for varspec in varlist.split(","):
        # A string value is the same exploded or not (RFC 6570 section 3.2.1).
        name, _, prefix = varspec.rstrip("*").partition(":")
        value = values.get(name)
        if value is None:
            continue
        if prefix:
            value = value[: int(prefix)]
        encoded = _encode_reserved(value) if operator.allow_reserved else quote(value, safe="")
        if not operator.named:
            parts.append(encoded)
        elif value:
            parts.append(f"{name}={encoded}")
        else:
            parts.append(name + operator.if_empty)
    if not parts:
        return ""
    return operator.first + operator.separator.join(parts)


def expand_template(template: str, values: Mapping[str, str]) -> str:
    """Expand an RFC 6570 URI Template with string ``values``; variables not in ``values`` are
    undefined. Raises AddsError (``spec.endpoint.template``) for a template outside the grammar.

    Literal characters not allowed in a URI are pct-encoded as UTF-8 (RFC 6570 section 3.1).
    """
    problem = template_problem(template)
    if problem is not None and problem[0] == "spec.endpoint.template":
        raise AddsError.single(*problem)
    out = []
    position = 0
    for match in _EXPRESSION.finditer(template):
        out.append(_encode_reserved(template[position : match.start()]))
        out.append(_expression(match.group(1), values))
        position = match.end()
    out.append(_encode_reserved(template[position:]))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Using one record or receipt
# ---------------------------------------------------------------------------------------------


def _value(document: SignedDocument | Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    value = document.document if isinstance(document, SignedDocument) else document
    if value.get("kind") != kind:
        raise AddsError.single(WRONG_KIND, f"expected a {kind} document", "/kind")
    return value


def _window(value: Mapping[str, Any], start: str, end: str, now: int) -> bool:
    begins, ends = value.get(start), value.get(end)
    if type(begins) is not int or type(ends) is not int:
        raise AddsError.single("spec.type", f"{start} and {end} must be integers")
    return begins <= now < ends


def _item_cids(value: Mapping[str, Any], member: str) -> set[str]:
    items = value.get(member)
    if not isinstance(items, list):
        return set()
    return {
        item["cid"]
        for item in items
        if isinstance(item, Mapping) and isinstance(item.get("cid"), str)
    }


def block_urls(
    record: SignedDocument | Mapping[str, Any],
    cid: str,
    *,
    transports: Collection[str] | None = None,
) -> list[str]:
    """The URLs at which ``record``'s endpoints offer the block ``cid``, best first.

    Endpoints are taken by ``priority`` ascending; those without one come last; ties keep the
    record's order. Only endpoints whose ``transport`` is in ``transports`` are used, when given.
    Templates that are not valid endpoint templates (possible in an unvalidated mapping) are
    skipped, and a URL that an earlier endpoint already gave is not repeated. ``cid`` must be an
    ADDS CID (AddsError otherwise); whether the record holds it is not checked (``record_holds``).
    """
    problem = cid_problem(cid)
    if problem is not None:
        raise AddsError.single(f"spec.cid.{problem[0]}", problem[1])
    endpoints = _value(record, "provider_record").get("endpoints")
    if not isinstance(endpoints, list):
        return []
    ranked = []
    for position, endpoint in enumerate(endpoints):
        if not isinstance(endpoint, Mapping):
            continue
        template, priority = endpoint.get("uri_template"), endpoint.get("priority")
        if not isinstance(template, str) or template_problem(template) is not None:
            continue
        if transports is not None and endpoint.get("transport") not in transports:
            continue
        rank = (0, priority) if type(priority) is int else (1, 0)
        ranked.append((rank, position, template))
    urls: list[str] = []
    for _, _, template in sorted(ranked):
        url = expand_template(template, {"cid": cid})
        if url not in urls:
            urls.append(url)
    return urls


def record_holds(record: SignedDocument | Mapping[str, Any], cid: str) -> bool:
    """Whether ``cid`` is in the record's inventory."""
    return cid in _item_cids(_value(record, "provider_record"), "inventory")


def record_in_force(record: SignedDocument | Mapping[str, Any], now: int) -> bool:
    """``issued_at`` <= ``now`` < ``expires_at``."""
    return _window(_value(record, "provider_record"), "issued_at", "expires_at", now)


def receipt_covers(receipt: SignedDocument | Mapping[str, Any], cids: Iterable[str]) -> set[str]:
    """Which of ``cids`` the receipt's ``items`` commit to."""
    committed = _item_cids(_value(receipt, "receipt"), "items")
    return {cid for cid in cids if cid in committed}


def receipt_in_force(receipt: SignedDocument | Mapping[str, Any], now: int) -> bool:
    """``issued_at`` <= ``now`` < ``retention_until``: the commitment holds at ``now``."""
    return _window(_value(receipt, "receipt"), "issued_at", "retention_until", now)


# ---------------------------------------------------------------------------------------------
# Resolving records
# ---------------------------------------------------------------------------------------------


def _record_summary(document: SignedDocument) -> dict[str, Any]:
    value = document.document
    return {
        "cid": document.cid,
        "sequence": value["sequence"],
        "issued_at": value["issued_at"],
        "expires_at": value["expires_at"],
        "supersedes": value.get("supersedes"),
    }


@dataclass(frozen=True, slots=True)
class ProviderResolution:
    """The state of one provider record: one ``record_id`` under one provider key.

    ``candidates`` are the valid records at the highest sequence, sorted by CID; with one it is
    ``current``, with more they are in ``conflict`` and ``current`` is None. ``history_conflicts``
    are lower sequences holding more than one record. ``supersedes`` is the CID the current
    record names, ``superseded`` that document when it was given, ``superseded_by`` the CIDs of
    same-key records that name the current record, and ``problems`` what is wrong along the
    current record's ``supersedes`` chain. ``provider_id`` is the id the first candidate claims.
    """

    provider_id: str
    provider_key: bytes
    record_id: str
    current: SignedDocument | None
    candidates: tuple[SignedDocument, ...]
    conflict: bool
    history_conflicts: tuple[int, ...]
    supersedes: str | None
    superseded: SignedDocument | None
    superseded_by: tuple[str, ...]
    problems: tuple[Problem, ...]

    @property
    def sequence(self) -> int:
        """The highest sequence of the record."""
        return int(self.candidates[0].document["sequence"])

    def expired_at(self, now: int) -> bool:
        """True when no record is in force at ``now``: there is no single winner, or the winner
        is outside ``issued_at`` <= now < ``expires_at`` (not yet issued, or expired)."""
        return self.current is None or not record_in_force(self.current, now)

    def as_json(self) -> dict[str, Any]:
        return {
            "provider_id": self.provider_id,
            "provider_key": b64url_encode(self.provider_key),
            "record_id": self.record_id,
            "sequence": self.sequence,
            "current": None if self.current is None else _record_summary(self.current),
            "conflict": self.conflict,
            "candidates": [_record_summary(c) for c in self.candidates],
            "history_conflicts": list(self.history_conflicts),
            "supersedes": self.supersedes,
            "supersedes_found": self.superseded is not None,
            "superseded_by": list(self.superseded_by),
            "problems": [p.as_dict() for p in self.problems],
        }


def _supersession(
    record: SignedDocument, by_cid: Mapping[str, SignedDocument]
) -> tuple[SignedDocument | None, tuple[Problem, ...]]:
    """The document ``record`` supersedes (when given) and the problems along its chain."""
    problems: list[Problem] = []
    link = record
    seen = {record.cid}
    first: SignedDocument | None = None
    while isinstance(target_cid := link.document.get("supersedes"), str):
        target = by_cid.get(target_cid)
        if link is record:
            first = target
        if target is None or target_cid in seen:
            break
        seen.add(target_cid)
        where = f"record {link.cid} supersedes {target_cid}"
        if target.kind != "provider_record":
            message = f"{where}, which is a {target.kind}"
            problems.append(Problem("/supersedes", "profile.supersedes.kind", message))
            break
        if signer_key(target) != signer_key(link):
            message = f"{where}, a record of another provider key"
            problems.append(Problem("/supersedes", "profile.supersedes.provider", message))
            break
        sequence, target_sequence = link.document["sequence"], target.document["sequence"]
        if target_sequence >= sequence:
            message = f"{where}, whose sequence {target_sequence} is not below {sequence}"
            problems.append(Problem("/supersedes", "profile.supersedes.sequence", message))
        link = target
    return first, tuple(problems)


def resolve_provider_records(
    documents: Iterable[DocumentInput],
    *,
    record_id: str | None = None,
    provider_key: bytes | None = None,
) -> Resolutions[ProviderResolution]:
    """Resolve every provider record found in ``documents``, or only those with ``record_id``
    and/or ``provider_key`` (raw 32 bytes), sorted by (provider key, record_id). Every document
    that is not a valid provider record is in ``rejected``, whatever the filters; documents of
    other kinds still count as given when a ``supersedes`` link is followed."""
    admitted, rejected = admit_documents(documents)
    by_cid = {document.cid: document for _, document in admitted}
    records = split_by_kind(admitted, "provider_record", rejected)
    successors: dict[tuple[bytes, str], list[str]] = {}
    for record in records:
        named = record.document.get("supersedes")
        if named is not None:
            successors.setdefault((signer_key(record), named), []).append(record.cid)
    groups: dict[tuple[bytes, str], list[SignedDocument]] = {}
    for record in records:
        signer, name = signer_key(record), str(record.document["record_id"])
        if (provider_key is None or signer == provider_key) and (
            record_id is None or name == record_id
        ):
            groups.setdefault((signer, name), []).append(record)
    resolutions = []
    for (key, group_id), group in sorted(groups.items()):
        grouped = tiers(group)
        current = grouped.top[0] if len(grouped.top) == 1 else None
        superseded, problems = (None, ()) if current is None else _supersession(current, by_cid)
        resolutions.append(
            ProviderResolution(
                provider_id=str(grouped.top[0].document["provider"]["id"]),
                provider_key=key,
                record_id=group_id,
                current=current,
                candidates=grouped.top,
                conflict=current is None,
                history_conflicts=grouped.split_below,
                supersedes=None if current is None else current.document.get("supersedes"),
                superseded=superseded,
                superseded_by=()
                if current is None
                else tuple(sorted(successors.get((key, current.cid), []))),
                problems=problems,
            )
        )
    return Resolutions(resolutions, rejected)
