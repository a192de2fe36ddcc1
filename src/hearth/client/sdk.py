"""``HearthClient``: the service's HTTP interface as typed calls, with the proofs built in.

What the client does for its caller:

- Registration (``POST /v1/register/agent``): the register-agent/v2 key proof, a fresh
  registration nonce, and (self-service only) the proof-of-work, solved at the difficulty the
  service publishes in ``GET /public/plans``. :meth:`HearthClient.prepare_registration` builds
  the exact body without sending it, so it can be prepared ahead of time.
- Exact-request root proofs (identity-authority/v1): :meth:`HearthClient.root_request`
  serialises the body once, signs those bytes and the target exactly as sent, reads the next
  sequence from the authority route (or from a 428), and retries once when its sequence turns
  out to be stale.
- Signed discovery and recovery (``identity-discovery/v1``, ``identity-recover/v1``).

Errors: every non-2xx answer raises :class:`HearthError` with the service's ``error`` code,
``message`` and ``details``. Transport failures (no connection, timeouts) are httpx2's own
exceptions. If a registration's answer is lost in transit the registration may still have
happened: find it with :meth:`HearthClient.discover` and :meth:`HearthClient.recover` rather
than registering again.

Secrets: the bearer and private keys never appear in a ``repr``, an exception or a log line;
result fields that hold a secret are left out of their ``repr``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2

from hearth import __version__
from hearth.proofs import AUTHORITY_HEADERS, authority_digest, sign_digest
from hearth.proofs.key_types import Ed25519PrivateKey

from .common import Authority, _now, _obj
from .errors import HearthError
from .identity import IdentityCalls
from .life import LifeCalls
from .memories import MemoryCalls
from .project import ProjectCalls
from .runtimes import RuntimeCalls
from .settings import Settings
from .wake import WakeCalls

__all__ = ["HearthClient"]

_SEQUENCE, _TIMESTAMP, _SIGNATURE = AUTHORITY_HEADERS
# Refusals a fresh proof can cure: the sequence the service wants is in details.next_sequence.
_RETRYABLE_PROOF_ERRORS = frozenset({"authority_proof_required", "authority_sequence_mismatch"})


def _json_bytes(body: Any) -> bytes:
    """The one serialisation of a body: compact, ASCII-only, so the bytes are unambiguous."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _retry_sequence(response: httpx2.Response) -> int | None:
    """The sequence a 428 or a sequence mismatch asks for, or None for any other answer."""
    if response.status_code not in (409, 428):
        return None
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(body, dict) or body.get("error") not in _RETRYABLE_PROOF_ERRORS:
        return None
    sequence = _obj(body.get("details")).get("next_sequence")
    if isinstance(sequence, int) and not isinstance(sequence, bool) and sequence >= 1:
        return sequence
    return None


class HearthClient(IdentityCalls, MemoryCalls, ProjectCalls, LifeCalls, WakeCalls, RuntimeCalls):
    """A synchronous client of one hearth service.

    ``api_key`` is the project bearer; it is sent only to routes that need one, and it is
    replaced by the bearer a successful :meth:`register` or :meth:`recover` returns. Use the
    client as a context manager, or call :meth:`close`.

    This class owns the transport and the root proofs; the calls come from one mixin per
    resource family: registration, plans, expressions, discovery and recovery from
    :class:`~hearth.client.identity.IdentityCalls`; memories and the chronicle from
    :class:`~hearth.client.memories.MemoryCalls`; project keys, backups, bootstrap and scaffold
    from :class:`~hearth.client.project.ProjectCalls`; wallets, the vault, forks, templates,
    elevation, attestations, the pulse and the public directory from
    :class:`~hearth.client.life.LifeCalls`; the wake and its voice from
    :class:`~hearth.client.wake.WakeCalls`; runtimes, strands, thoughts (sealed and opened
    here), the inbox and identity keys from :class:`~hearth.client.runtimes.RuntimeCalls`
    (docs/sdk.md lists every call).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._http = httpx2.Client(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json", "User-Agent": f"hearth-sdk/{__version__}"},
        )

    @classmethod
    def from_env(cls, *, timeout: float = 30.0) -> HearthClient:
        """A client for ``$HEARTH_BASE_URL`` with the bearer of ``$SERVICE_API_KEY`` (else of the
        file ``$SERVICE_API_KEY_FILE`` names); see :class:`~hearth.client.settings.Settings`."""
        settings = Settings.from_env()
        return cls(settings.base_url, api_key=settings.api_key, timeout=timeout)

    @classmethod
    def from_home(cls, home: Path | str | None = None, *, timeout: float = 30.0) -> HearthClient:
        """A client for the identity ``hearth register`` (or ``recover``) kept in ``home`` (else
        ``$HEARTH_HOME``, else ``~/.config/hearth``): its profile's service and its bearer."""
        settings = Settings.from_home(home)
        return cls(settings.base_url, api_key=settings.api_key, timeout=timeout)

    # -- lifecycle --

    def __enter__(self) -> HearthClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        # The bearer itself never appears; only whether one is held.
        held = "set" if self._api_key else "none"
        return f"HearthClient(base_url={self.base_url!r}, api_key=<{held}>)"

    @property
    def api_key(self) -> str | None:
        return self._api_key

    @api_key.setter
    def api_key(self, value: str | None) -> None:
        self._api_key = value

    # -- transport --

    def _headers(
        self, authenticated: bool, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        headers = dict(extra or {})
        if authenticated:
            if not self._api_key:
                raise ValueError("this call needs a project bearer: pass api_key= or register")
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        headers = self._headers(authenticated, headers)
        content = None
        if body is not None:
            content = _json_bytes(body)
            headers["Content-Type"] = "application/json"
        response = self._http.request(method, path, content=content, params=params, headers=headers)
        if not response.is_success:
            raise HearthError.from_response(response)
        return response

    def _json(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        response = self._send(
            method, path, body=body, params=params, authenticated=authenticated, headers=headers
        )
        try:
            data = response.json()
        except (ValueError, UnicodeDecodeError):
            raise HearthError(
                response.status_code, "invalid_response", "the answer is not JSON", None, None
            ) from None
        if not isinstance(data, dict):
            raise HearthError(
                response.status_code, "invalid_response", "the answer is not a JSON object"
            )
        return data

    # -- root proofs --

    def root_request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any,
        did: str,
        root_key: Ed25519PrivateKey,
        identity_id: str | None = None,
        sequence: int | None = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
    ) -> Any:
        """Send one request with an exact-request root proof; the decoded JSON answer.

        The body is serialised once and those bytes are both signed and sent. The sequence is
        ``sequence`` when given; otherwise it is read from the authority route of
        ``identity_id``; without either the request is first sent unproven and the 428's
        ``details.next_sequence`` is used. A proof refused as missing (428) or as carrying a
        stale sequence (409 ``authority_sequence_mismatch``) is signed again once, with the
        sequence the refusal names. The target signed is the path and query of the URL
        actually sent. ``json_body=None`` sends no body at all (the empty body is signed).
        """
        body_bytes = b"" if json_body is None else _json_bytes(json_body)
        content_type = {"Content-Type": "application/json"} if body_bytes else None
        method = method.upper()
        if sequence is None and identity_id is not None:
            authority = self.authority(identity_id)
            if authority.mode == "agent_root":
                sequence = authority.next_sequence

        def send(proof_sequence: int | None) -> httpx2.Response:
            headers = self._headers(authenticated, content_type)
            request = self._http.build_request(
                method, path, content=body_bytes or None, params=params, headers=headers
            )
            if proof_sequence is not None:
                target = request.url.raw_path.decode("ascii")
                timestamp = _now()
                digest = authority_digest(
                    did, method, target, body_bytes, sequence=proof_sequence, timestamp=timestamp
                )
                request.headers[_SEQUENCE] = str(proof_sequence)
                request.headers[_TIMESTAMP] = timestamp
                request.headers[_SIGNATURE] = sign_digest(root_key, digest)
            return self._http.send(request)

        response = send(sequence)
        retried = False
        while not response.is_success:
            wanted = _retry_sequence(response)
            if wanted is None:
                break
            if sequence is None:
                # The unproven probe: the service named the sequence to sign.
                sequence = wanted
            elif retried:
                break
            else:
                retried = True
                sequence = wanted
            response = send(sequence)
        if not response.is_success:
            raise HearthError.from_response(response)
        if not response.content:
            return None
        return response.json()

    # -- identities and the proofs they authorise --

    def authority(self, identity_id: str) -> Authority:
        return Authority.from_json(self._json("GET", f"/v1/identities/{identity_id}/authority"))

    def _proven(
        self,
        method: str,
        path: str,
        body: Any,
        identity_id: str | None,
        root_key: Ed25519PrivateKey | None,
    ) -> Any:
        """A mutation that the identity's root proof may authorise: proven when a root key and
        an identity are given (and the identity is agent_root), sent with the bearer alone
        otherwise."""
        if root_key is not None and identity_id is not None:
            authority = self.authority(identity_id)
            if authority.mode == "agent_root":
                return self.root_request(
                    method,
                    path,
                    json_body=body,
                    did=authority.did,
                    root_key=root_key,
                    sequence=authority.next_sequence,
                )
        response = self._send(method, path, body=body)
        return response.json() if response.content else None
