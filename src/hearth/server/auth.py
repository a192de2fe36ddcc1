"""Authentication dependencies: the project bearer, and the exact-request root proof."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Header, Request
from pydantic import BaseModel

from .context import Hearth
from .errors import unauthorized
from .services import authority, identities, keys
from .services.authority import RootGrant


def hearth_of(request: Request) -> Hearth:
    hearth: Hearth = request.app.state.hearth
    return hearth


HearthDep = Annotated[Hearth, Depends(hearth_of)]


@dataclass(frozen=True)
class Caller:
    project_id: str
    key_id: str


async def require_bearer(request: Request, hearth: HearthDep) -> Caller:
    header = request.headers.get("authorization", "")
    scheme, _, bearer = header.partition(" ")
    if scheme.lower() != "bearer" or not bearer.strip():
        raise unauthorized()
    async with hearth.db.read() as conn:
        resolved = await keys.resolve(conn, bearer.strip())
    if resolved is None:
        raise unauthorized("The bearer is not a live project key (unknown or revoked).")
    return Caller(*resolved)


CallerDep = Annotated[Caller, Depends(require_bearer)]

Body = TypeVar("Body", bound=BaseModel)


@dataclass(frozen=True)
class Authorized(Generic[Body]):
    caller: Caller
    body: Body
    grant: RootGrant

    @property
    def identity(self) -> dict[str, Any]:
        return self.grant.identity


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


def root_proof(
    model: type[Body], locate: Locate = lambda request, _body: request.path_params["id"]
) -> Callable[..., AsyncIterator[Authorized[Body]]]:
    """A dependency for `bearer+root` routes: bearer, body, identity, proof, claim.

    The body is a parameter of this dependency, so FastAPI validates it before the dependency
    runs: a malformed body is refused with 422 before any sequence could be claimed. The lease
    taken by the claim is cleared by the route's own transaction (``grant.release``); this
    dependency clears it again afterwards in case the route failed before that.
    """

    async def dependency(
        request: Request,
        hearth: HearthDep,
        caller: CallerDep,
        body: Any,
        # Declared so that the OpenAPI document names the proof headers; read from the request.
        _sequence: SequenceHeader = None,
        _timestamp: TimestampHeader = None,
        _signature: SignatureHeader = None,
    ) -> AsyncIterator[Authorized[Body]]:
        async with hearth.db.read() as conn:
            identity = await identities.find(conn, caller.project_id, locate(request, body))
        grant = await authority.authorize_request(hearth, identity, request)
        try:
            yield Authorized(caller, body, grant)
        finally:
            if grant.lease and not grant.released:
                async with hearth.db.write() as conn:
                    await grant.release(conn)

    # FastAPI reads the body model from the annotation; set it on the class, not a string.
    dependency.__annotations__["body"] = model
    return dependency
