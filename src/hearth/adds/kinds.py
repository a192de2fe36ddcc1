"""The five ADDS 0.1 document kinds: their members, and the rules that span members.

Member tables follow the specification's tables one to one. ``KINDS`` maps each ``kind`` to its
definition: the structural check, the member that names the signer, and the cross-member rules
(specification rules coded ``spec.``, DESIGN.md section 3 profile rules coded ``profile.``).
Cross-member rules look only at members that passed their own checks, so one mistake is reported
once.
"""

from __future__ import annotations

import base64
import hashlib
import re
from binascii import a2b_base64, b2a_base64
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from itertools import repeat
from operator import add, itemgetter
from typing import Any, TypeGuard

from .b64 import canonical_b64url_pattern
from .problems import Problem
from .rules import (
    EXTENSIONS_GROUP,
    Check,
    Field,
    Rule,
    any_object,
    array,
    b64url,
    cid,
    const,
    enum,
    extensions,
    integer,
    obj,
    string,
)
from .uritemplates import template_problem

__all__ = [
    "KINDS",
    "RIGHTS",
    "SIGNER_MEMBER",
    "TAG_LENGTH",
    "KindRules",
    "Right",
    "x25519_key_id",
]

Problems = list[Problem]
CrossCheck = Callable[[dict[str, Any], Problems], None]

TAG_LENGTH = 16  # AES-GCM tag bytes appended to every ciphertext block


class Right(StrEnum):
    """What a grant lets its audience do with a manifest's content (``rights``)."""

    READ = "read"
    DERIVE = "derive"
    REPLICATE = "replicate"
    DELEGATE = "delegate"


RIGHTS: tuple[str, ...] = tuple(right.value for right in Right)
MAX_CHUNKS = 1_048_576
MAX_CHUNK_SIZE = 16_777_216
_KEY_ID = re.compile(r"sha256:[A-Za-z0-9_-]{43}")
# Canonical base64url of 32 bytes (the length, the alphabet and the unused bits), in one match.
_BYTES32_TEXT = canonical_b64url_pattern(43)
_URL_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_STANDARD_TO_URL = bytes.maketrans(b"+/", b"-_")

# Shared scalar types (specification, "Shared scalar types").
version = const("0.1")
uint53 = integer()
uint32 = integer(0, 4_294_967_295)
epoch_seconds = integer(epoch=True)
bytes32 = b64url(43)
nonce12 = b64url(16)
signature64 = b64url(86)
text = string()

# Shared objects.
principal = obj({"id": text, "ed25519_public_key": bytes32})
signature = obj({"algorithm": const("Ed25519"), "public_key": bytes32, "value": signature64})
chunk = obj(
    {
        "index": uint32,
        "cid": cid(),
        "nonce": nonce12,
        "plaintext_size": uint53,
        "ciphertext_size": integer(16),
    }
)
inventory_item = obj(
    {
        "cid": cid(),
        "size": uint53,
        "role": enum("block", "manifest", "grant", "provider_record", "head", "receipt", "other"),
    }
)
endpoint = obj(
    {
        "transport": text,
        "uri_template": text,
        "priority": Field(integer(0, 65535), required=False),
    }
)


def _optional(check: Check) -> Field:
    return Field(check, required=False)


def _signed(kind: str, members: dict[str, Field | Check]) -> Rule:
    return obj(
        {
            "adds_version": version,
            "kind": const(kind),
            **members,
            "signature": signature,
            "extensions": _optional(extensions),
        }
    )


MANIFEST = _signed(
    "manifest",
    {
        "object_id": text,
        "publisher": principal,
        "created_at": epoch_seconds,
        "media_type": _optional(text),
        "schema": _optional(text),
        "plaintext": obj({"size": uint53}),
        "encryption": obj(
            {
                "algorithm": const("AES-256-GCM"),
                "key_id": text,
                "block_aad": const("adds-block/v1"),
                "chunk_size": integer(1, MAX_CHUNK_SIZE),
                "aad_context": bytes32,
            }
        ),
        "chunks": array(chunk, min_items=1, max_items=MAX_CHUNKS),
        "provenance": _optional(
            obj(
                {
                    "parents": _optional(array(cid(), unique=True)),
                    "transformation": _optional(text),
                    "generated_by": _optional(text),
                }
            )
        ),
        "metadata": _optional(any_object),
    },
)

GRANT = _signed(
    "grant",
    {
        "grant_id": text,
        "manifest_cid": cid(),
        "issuer": principal,
        "audience": text,
        "audience_x25519_public_key": bytes32,
        "audience_x25519_key_id": string(),
        "rights": array(enum(*RIGHTS), min_items=1, unique=True),
        "issued_at": epoch_seconds,
        "not_before": _optional(epoch_seconds),
        "expires_at": epoch_seconds,
        "parent_grant": _optional(cid()),
        "scope": _optional(
            obj(
                {"task_id": _optional(text), "purpose": _optional(text)},
                min_properties=1,
            )
        ),
        "key_wrap": obj(
            {
                "algorithm": const("X25519-HKDF-SHA256-AES-256-GCM"),
                "ephemeral_public_key": bytes32,
                "nonce": nonce12,
                "ciphertext": b64url(64),
            }
        ),
    },
)

PROVIDER_RECORD = _signed(
    "provider_record",
    {
        "record_id": text,
        "provider": principal,
        "sequence": uint53,
        "issued_at": epoch_seconds,
        "expires_at": epoch_seconds,
        "supersedes": _optional(cid()),
        "inventory": array(inventory_item, min_items=1),
        "endpoints": array(endpoint, min_items=1),
    },
)

HEAD = _signed(
    "head",
    {
        "head_id": text,
        "issuer": principal,
        "sequence": uint53,
        "manifest_cid": cid(),
        "parents": array(cid(), unique=True),
        "updated_at": epoch_seconds,
    },
)

RECEIPT = _signed(
    "receipt",
    {
        "receipt_id": text,
        "provider": principal,
        "provider_record": _optional(cid()),
        "issued_at": epoch_seconds,
        "retention_until": epoch_seconds,
        "commitment": enum("store", "store_and_serve"),
        "items": array(inventory_item, min_items=1),
        "terms": _optional(
            obj(
                {
                    "availability_target": _optional(text),
                    "storage_class": _optional(text),
                    "regions": _optional(array(text, unique=True)),
                }
            )
        ),
    },
)


def x25519_key_id(public_key: bytes) -> str:
    """The audience key fingerprint: ``sha256:`` + base64url(sha256(raw 32-byte key))."""
    digest = hashlib.sha256(public_key).digest()
    return "sha256:" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _is_int(value: Any) -> TypeGuard[int]:
    return type(value) is int


def _time_order(earlier: str, later: str) -> CrossCheck:
    """Profile: ``earlier`` <= ``later`` (an issued document cannot end before it starts)."""

    def check(document: dict[str, Any], problems: Problems) -> None:
        first, second = document.get(earlier), document.get(later)
        if _is_int(first) and _is_int(second) and first > second:
            problems.append(
                Problem(f"/{later}", "profile.time.order", f"{later} is before {earlier}")
            )

    return check


def _grant_rights(document: dict[str, Any], problems: Problems) -> None:
    """Spec rule 5: ``read`` appears exactly once (a duplicate is also a uniqueness breach)."""
    rights = document.get("rights")
    if type(rights) is list and rights.count("read") != 1:
        word = "lacks" if "read" not in rights else "lists more than once"
        problems.append(Problem("/rights", "spec.rights.read", f"rights {word} 'read'"))


def _grant_key_id(document: dict[str, Any], problems: Problems) -> None:
    key_id = document.get("audience_x25519_key_id")
    if type(key_id) is not str:
        return
    if not _KEY_ID.fullmatch(key_id):
        problems.append(
            Problem(
                "/audience_x25519_key_id",
                "spec.pattern",
                "must match ^sha256:[A-Za-z0-9_-]{43}$",
            )
        )
        return
    public_key = document.get("audience_x25519_public_key")
    if type(public_key) is str and _BYTES32_TEXT.fullmatch(public_key):
        # x25519_key_id(raw) == key_id, without its Python-level base64 wrappers: binascii on
        # the standard alphabet, translated (every grant pays this, beside its one verify).
        raw = a2b_base64(public_key.encode("ascii").translate(_URL_TO_STANDARD) + b"=")
        digest = b2a_base64(hashlib.sha256(raw).digest(), newline=False)
        if digest[:43].translate(_STANDARD_TO_URL) != key_id[7:].encode("ascii"):
            problems.append(
                Problem(
                    "/audience_x25519_key_id",
                    "spec.key_id.mismatch",
                    "is not the sha256 fingerprint of audience_x25519_public_key",
                )
            )


def _endpoints(document: dict[str, Any], problems: Problems) -> None:
    endpoints = document.get("endpoints")
    if type(endpoints) is not list:
        return
    for index, item in enumerate(endpoints):
        template = item.get("uri_template") if type(item) is dict else None
        if type(template) is str and template:
            problem = template_problem(template)
            if problem is not None:
                problems.append(Problem(f"/endpoints/{index}/uri_template", *problem))


_CHUNK_NUMBERS = itemgetter("index", "plaintext_size", "ciphertext_size")
_INT_ONLY = {int}


def _chunk_arithmetic_holds(chunks: list[Any], chunk_size: int | None, size_member: Any) -> bool:
    """Whether _chunk_arithmetic finds nothing to report, decided a column at a time in C-level
    passes; False also when unsure (then the loop below decides and reports)."""
    if chunk_size is None or not _is_int(size_member) or {type(c) for c in chunks} != {dict}:
        return False
    try:
        rows = list(map(_CHUNK_NUMBERS, chunks))
    except KeyError:
        return False
    indices, sizes, sealed = (list(column) for column in zip(*rows, strict=True))
    if any(set(map(type, column)) != _INT_ONLY for column in (indices, sizes, sealed)):
        return False
    last = len(sizes) - 1
    return (
        indices == list(range(len(indices)))
        and sealed == list(map(add, sizes, repeat(TAG_LENGTH)))
        and sizes.count(chunk_size) - (sizes[last] == chunk_size) == last
        and (1 <= sizes[last] <= chunk_size or (sizes[last] == 0 and last == 0))
        and sum(sizes) == size_member
    )


def _chunk_arithmetic(document: dict[str, Any], problems: Problems) -> None:
    """Profile: indices 0..n-1 in order; ciphertext = plaintext + tag; full chunks but the last;
    the last holds 1..chunk_size bytes (0 only for an empty object); sizes add up."""
    chunks = document.get("chunks")
    encryption = document.get("encryption")
    plaintext = document.get("plaintext")
    if type(chunks) is not list or not chunks:
        return
    declared = encryption.get("chunk_size") if type(encryption) is dict else None
    chunk_size = declared if _is_int(declared) and 1 <= declared <= MAX_CHUNK_SIZE else None
    size_member = plaintext.get("size") if type(plaintext) is dict else None
    if _chunk_arithmetic_holds(chunks, chunk_size, size_member):
        return
    total = 0
    last = len(chunks) - 1
    for position, item in enumerate(chunks):
        if type(item) is not dict:
            return
        pointer = f"/chunks/{position}"
        index, size, sealed = (
            item.get("index"),
            item.get("plaintext_size"),
            item.get("ciphertext_size"),
        )
        if _is_int(index) and index != position:
            problems.append(
                Problem(f"{pointer}/index", "profile.chunks.index", f"must be {position}")
            )
        if not _is_int(size):
            return
        total += size
        if _is_int(sealed) and sealed != size + TAG_LENGTH:
            problems.append(
                Problem(
                    f"{pointer}/ciphertext_size",
                    "profile.chunks.ciphertext_size",
                    "must be plaintext_size + 16",
                )
            )
        if chunk_size is None:
            continue
        if position < last and size != chunk_size:
            problems.append(
                Problem(
                    f"{pointer}/plaintext_size",
                    "profile.chunks.plaintext_size",
                    "every chunk but the last holds exactly chunk_size bytes",
                )
            )
        elif position == last and not (1 <= size <= chunk_size or (size == 0 and last == 0)):
            problems.append(
                Problem(
                    f"{pointer}/plaintext_size",
                    "profile.chunks.plaintext_size",
                    "the last chunk holds 1 to chunk_size bytes (0 only for an empty object)",
                )
            )
    if _is_int(size_member) and size_member != total:
        problems.append(
            Problem(
                "/plaintext/size",
                "profile.chunks.total",
                f"the chunks hold {total} bytes, not {size_member}",
            )
        )


@dataclass(frozen=True, slots=True)
class KindRules:
    check: Rule
    signer: str
    cross: tuple[CrossCheck, ...]
    # The regex of the kind's canonical text (rules.Canonical), compiled, and its post check.
    canonical: re.Pattern[str] | None = None
    canonical_post: Callable[[Any], bool] | None = None

    def canonical_match(self, text: str, document: dict[str, Any]) -> bool:
        """Whether ``text`` (which the JSON scanner parsed into ``document``) is the canonical
        form of a document that passes the structural check: then check_structure would find
        nothing, names are unique and the bytes are the RFC 8785 form. False when unsure."""
        if self.canonical is None:
            return False
        match = self.canonical.fullmatch(text)
        if match is None:
            return False
        ext_text = match.group(EXTENSIONS_GROUP)
        # Each extension name ends with '":' and nothing else does (no string holds a quote):
        # as many as the parsed object has members, or one was repeated.
        if ext_text is not None and ext_text.count('":') != len(document["extensions"]):
            return False
        return self.canonical_post is None or self.canonical_post(document)

    def check_structure(self, document: dict[str, Any], problems: Problems) -> None:
        """The structural check: the column-wise predicate first, and the reporting walk (which
        builds a pointer per value) only for a document it does not pass (rules.py)."""
        if not self.check.all_ok([document]):
            self.check(document, "", problems)


def _kind(check: Rule, signer: str, cross: tuple[CrossCheck, ...]) -> KindRules:
    text = check.canonical
    if text is None:
        return KindRules(check, signer, cross)
    return KindRules(check, signer, cross, re.compile(text.pattern), text.post)


KINDS: dict[str, KindRules] = {
    "manifest": _kind(MANIFEST, "publisher", (_chunk_arithmetic,)),
    "grant": _kind(
        GRANT,
        "issuer",
        (_grant_rights, _grant_key_id, _time_order("issued_at", "expires_at")),
    ),
    "provider_record": _kind(
        PROVIDER_RECORD,
        "provider",
        (_endpoints, _time_order("issued_at", "expires_at")),
    ),
    "head": _kind(HEAD, "issuer", ()),
    "receipt": _kind(RECEIPT, "provider", (_time_order("issued_at", "retention_until"),)),
}

SIGNER_MEMBER = {kind: rules.signer for kind, rules in KINDS.items()}
