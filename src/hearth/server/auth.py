"""Authentication dependencies: the project bearer, and the exact-request root proof.

Every route that needs the project bearer reaches it through ``BearerDep`` (directly, or through
``CallerDep`` or a root-proof dependency): FastAPI then names the scheme in the OpenAPI
document, in ``components.securitySchemes`` and in each such operation's ``security``, so the
document's list of authenticated operations is the routes' own dependencies, never a list kept
by hand.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Header, Request
from fastapi.openapi.models import HTTPBearer as HTTPBearerModel
from fastapi.security.base import SecurityBase
from pydantic import BaseModel
from sqlalchemy import Connection

from .changes import MUTATING
from .context import Hearth
from .db.rows import IdentityRow
from .errors import unauthorized
from .services import authority, identities, keys
from .services.authority import RootGrant, SignedRequest


async def hearth_of(request: Request) -> Hearth:
    # async on purpose: FastAPI runs a plain-def dependency in its thread pool, a thread hop
    # on every request for a dictionary lookup.
    hearth: Hearth = request.app.state.hearth
    return hearth


HearthDep = Annotated[Hearth, Depends(hearth_of)]


@dataclass(frozen=True)
class Caller:
    project_id: str
    key_id: str


def bearer_of(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, bearer = header.partition(" ")
    if scheme.lower() != "bearer" or not bearer.strip():
        raise unauthorized()
    return bearer.strip()


class ProjectBearer(SecurityBase):
    """The project bearer as a security scheme. It reads the header with ``bearer_of``, so a
    missing or malformed one is the service's own 401 (FastAPI's HTTPBearer would answer 403)."""

    def __init__(self) -> None:
        self.model = HTTPBearerModel(
            description="A project API key: answered once by POST /v1/register/agent, or by "
            "POST /v1/keys."
        )
        self.scheme_name = "bearer"

    async def __call__(self, request: Request) -> str:
        return bearer_of(request)


BearerDep = Annotated[str, Depends(ProjectBearer())]


def caller_of(conn: Connection, bearer: str) -> Caller:
    resolved = keys.resolve(conn, bearer)
    if resolved is None:
        raise unauthorized("The bearer is not a live project key (unknown or revoked).")
    return Caller(*resolved)


T = TypeVar("T")


async def lookup(hearth: Hearth, request: Request, fn: Callable[..., T], *args: Any) -> T:
    """An authentication read: for a mutation, on the writer's connection; else a snapshot.

    On SQLite a connection drops its page cache whenever another connection has written since
    its last read, so under a stream of writes a reader's lookup starts cold (measured: 0.52 ms
    against 0.12 on the writer's warm connection), and a mutation queues on the writer next
    anyway. Reads of read-only routes stay on the reader pool, beside the writer.
    """
    if request.method in MUTATING:
        return await hearth.db.transaction(fn, *args)
    return await hearth.db.snapshot(fn, *args)


async def require_bearer(request: Request, hearth: HearthDep, bearer: BearerDep) -> Caller:
    return await lookup(hearth, request, caller_of, bearer)


CallerDep = Annotated[Caller, Depends(require_bearer)]

Body = TypeVar("Body", bound=BaseModel)


@dataclass(frozen=True)
class Authorized(Generic[Body]):
    caller: Caller
    body: Body
    grant: RootGrant

    @property
    def identity(self) -> IdentityRow:
        return self.grant.identity


def request_target(scope: Mapping[str, Any]) -> str:
    """Absolute path and query exactly as sent (raw, still percent-encoded), no fragment."""
    raw = scope.get("raw_path") or scope["path"].encode("utf-8")
    target = raw.decode("latin-1")
    query = scope.get("query_string", b"")
    return f"{target}?{query.decode('latin-1')}" if query else target


def signed_request(request: Request, body: bytes) -> SignedRequest:
    """What a root proof of the request being served covers: its method, raw target, body and
    headers."""
    return SignedRequest(
        method=request.method,
        target=request_target(request.scope),
        body=body,
        headers={k.lower(): v for k, v in request.headers.items()},
    )


def authorize_request(
    hearth: Hearth, identity: IdentityRow, request: Request, body: bytes
) -> RootGrant:
    """``authority.authorize`` for the request being served."""
    return authority.authorize(
        identity, signed_request(request, body), freshness_ms=hearth.settings.freshness_ms
    )


Locate = Callable[[Request, Any], str]


_PROOF = "Exact-request root proof (identity-authority/v1)."
SequenceHeader = Annotated[
    str | None, Header(alias="X-Service-Authority-Sequence", description=_PROOF)
]
TimestampHeader = Annotated[
    str | None, Header(alias="X-Service-Authority-Timestamp", description=_PROOF)
]
SignatureHeader = Annotated[
    str | None, Header(alias="X-Service-Authority-Signature", description=_PROOF)
]


def _caller_and_identity(conn: Connection, bearer: str, ref: str) -> tuple[Caller, IdentityRow]:
    """Both lookups of a root-proof route on one connection: one round trip, not two."""
    caller = caller_of(conn, bearer)
    return caller, identities.find(conn, caller.project_id, ref)


def root_proof(
    model: type[Body], locate: Locate = lambda request, _body: request.path_params["id"]
) -> Callable[..., Awaitable[Authorized[Body]]]:
    """A dependency for `bearer+root` routes: bearer, body, identity, then the proof.

    The body is a parameter of this dependency, so FastAPI validates it before the dependency
    runs: a malformed body is refused with 422 before the proof is even read. Nothing is
    claimed here: the route calls ``auth.grant.claim(conn)`` inside its own transaction, so the
    sequence is consumed exactly when the mutation commits.
    """

    async def dependency(
        request: Request,
        hearth: HearthDep,
        bearer: BearerDep,
        body: Any,
        # Declared so that the OpenAPI document names the proof headers; read from the request.
        _sequence: SequenceHeader = None,
        _timestamp: TimestampHeader = None,
        _signature: SignatureHeader = None,
    ) -> Authorized[Body]:
        caller, identity = await lookup(
            hearth, request, _caller_and_identity, bearer, locate(request, body)
        )
        grant = authorize_request(hearth, identity, request, await request.body())
        return Authorized(caller, body, grant)

    # FastAPI reads the body model from the annotation; set it on the class, not a string.
    dependency.__annotations__["body"] = model
    return dependency
