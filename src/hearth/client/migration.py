"""An identity's life arriving at another service (issue 20, docs/export.md "Import"):
the service's X25519 key, and the import itself. ``MigrationCalls`` is a mixin of both
clients; ``hearth.client.export.import_export`` runs the whole step from an export file."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO

import httpx2

from hearth.adds.car import read_header
from hearth.proofs import format_timestamp, sign_digest
from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.life_import import IMPORT_HEADERS, import_digest

from .calls import Call, op
from .common import Authority, Transport, _obj, _str
from .core import CoreCalls
from .errors import HearthError

__all__ = ["Imported", "MigrationCalls", "Moved", "ProviderBoxKey"]

CAR_MEDIA_TYPE = "application/vnd.ipld.car"
BODY_CHUNK = 1 << 20  # what a streamed import body reads from its file at a time
# The service answers an import once it has verified and written the whole life: minutes for a
# large one, so the wait for its answer is not the client's usual read timeout.
IMPORT_ANSWER_SECONDS = 3600.0


class _FileBody(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A request body read from a file a chunk at a time, by either client (a call is run by
    the sync and the async one alike): the body is never in memory whole."""

    def __init__(self, source: BinaryIO) -> None:
        self.source = source

    def _chunks(self) -> Iterator[bytes]:
        self.source.seek(0)
        while chunk := self.source.read(BODY_CHUNK):
            yield chunk

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks():  # a local file's read: short, and never a socket's wait
            yield chunk


@dataclass(frozen=True)
class ProviderBoxKey:
    """A service's X25519 key (base64url), to which an export is granted for an import there."""

    x25519_public_key: str
    ed25519_public_key: str
    derivation: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProviderBoxKey:
        return cls(
            x25519_public_key=_str(data, "x25519_public_key"),
            ed25519_public_key=_str(data, "ed25519_public_key"),
            derivation=_str(data, "derivation"),
        )


@dataclass(frozen=True)
class Imported:
    """The identity as the importing service now holds it, and the records it recreated."""

    authority: Authority
    root: str
    records: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Imported:
        records = _obj(data.get("records"))
        return cls(
            authority=Authority.from_json(_obj(data.get("authority"))),
            root=_str(data, "root"),
            records={k: v for k, v in records.items() if isinstance(v, int)},
        )


@dataclass(frozen=True)
class Moved:
    """An identity recorded as moved: where it lives now (``service``, ``did``)."""

    identity_id: str
    did: str
    status: str
    moved_to: dict[str, str]
    runtimes_stopped: tuple[str, ...] = ()  # its runtimes the old service stopped with it

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Moved:
        where = _obj(data.get("moved_to"))
        stopped = data.get("runtimes_stopped")
        return cls(
            identity_id=_str(data, "identity_id"),
            did=_str(data, "did"),
            status=_str(data, "status"),
            moved_to={k: v for k, v in where.items() if isinstance(v, str)},
            runtimes_stopped=tuple(
                r for r in (stopped if isinstance(stopped, list) else []) if isinstance(r, str)
            ),
        )


class MigrationCalls:
    @op
    def provider_box_key(self: Transport) -> Call[ProviderBoxKey]:
        """The service's X25519 key (public): grant an export to it to import it here."""
        data = yield from self._json("GET", "/public/provider/box-key", authenticated=False)
        return ProviderBoxKey.from_json(data)

    @op
    def import_life(
        self: Transport,
        car: bytes | BinaryIO,
        *,
        root_key: Ed25519PrivateKey,
        box_public: str,
        display_name: str | None = None,
    ) -> Call[Imported]:
        """Import an exported life (``car``, its objects granted to ``box_public``, this
        service's X25519 key) into the bearer's project, proving with ``root_key`` (the
        identity's root key) a fresh identity-import/v1 over the CAR's root. ``car`` is the
        bytes or a seekable binary file, which is streamed (read a chunk at a time)."""
        source = io.BytesIO(car) if isinstance(car, bytes) else car
        source.seek(0)
        roots, _ = read_header(source)
        if len(roots) != 1:
            raise ValueError("an exported life names exactly one root")
        timestamp = format_timestamp(datetime.now(UTC))
        signature = sign_digest(root_key, import_digest(roots[0], box_public, timestamp))
        headers = self._headers(True, {"Content-Type": CAR_MEDIA_TYPE})
        headers[IMPORT_HEADERS[0]] = timestamp
        headers[IMPORT_HEADERS[1]] = signature
        params = {"display_name": display_name} if display_name else None
        usual = self._http.timeout
        waits = httpx2.Timeout(
            connect=usual.connect, read=IMPORT_ANSWER_SECONDS, write=usual.write, pool=usual.pool
        )
        request = self._http.build_request(
            "POST", "/v1/identities/import", params=params, headers=headers, timeout=waits
        )
        request.headers["Content-Length"] = str(source.seek(0, io.SEEK_END))
        request.stream = _FileBody(source)
        response = yield request
        if not response.is_success:
            raise HearthError.from_response(response)
        return Imported.from_json(response.json())

    @op
    def move_identity(
        self: Transport,
        identity_id: str,
        *,
        service: str,
        did: str,
        root_key: Ed25519PrivateKey,
    ) -> Call[Moved]:
        """Record on this service that the identity now lives on ``service`` as ``did`` (its
        mutations here are refused with 410 ``moved`` afterwards), with the root proof."""
        authority = yield from CoreCalls.authority.gen(self, identity_id)
        data = yield from CoreCalls.root_request.gen(
            self,
            "POST",
            f"/v1/identities/{identity_id}/move",
            json_body={"service": service, "did": did},
            did=authority.did,
            root_key=root_key,
            sequence=authority.next_sequence if authority.mode == "agent_root" else None,
        )
        return Moved.from_json(_obj(data))
