"""The calls every family builds on, written once for both clients (see ``calls.py``): a
request with or without the bearer, its JSON answer, and the exact-request root proofs
(identity-authority/v1) with the authority read they need. ``CoreCalls`` is a mixin of
:class:`~hearth.client.HearthClient` and :class:`~hearth.client.AsyncHearthClient`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx2

from hearth.proofs import AUTHORITY_HEADERS, authority_digest, sign_digest
from hearth.proofs.key_types import Ed25519PrivateKey

from .calls import Call, op
from .common import Authority, Transport, _now, _obj, segment
from .errors import HearthError

__all__ = ["CoreCalls"]

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


class CoreCalls:
    """The transport of every call, and the root proofs."""

    _http: httpx2.Client | httpx2.AsyncClient
    _api_key: str | None

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
    ) -> Call[httpx2.Response]:
        all_headers = self._headers(authenticated, headers)
        content = None
        if body is not None:
            content = _json_bytes(body)
            all_headers["Content-Type"] = "application/json"
        response = yield self._http.build_request(
            method, path, content=content, params=params, headers=all_headers
        )
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
    ) -> Call[dict[str, Any]]:
        response = yield from self._send(
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

    @op
    def root_request(
        self: Transport,
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
    ) -> Call[Any]:
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
            authority = yield from CoreCalls.authority.gen(self, identity_id)
            if authority.mode == "agent_root":
                sequence = authority.next_sequence

        def signed(proof_sequence: int | None) -> httpx2.Request:
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
            return request

        response = yield signed(sequence)
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
            response = yield signed(sequence)
        if not response.is_success:
            raise HearthError.from_response(response)
        if not response.content:
            return None
        return response.json()

    @op
    def authority(self: Transport, identity_id: str) -> Call[Authority]:
        data = yield from self._json("GET", f"/v1/identities/{segment(identity_id)}/authority")
        return Authority.from_json(data)

    @op
    def identity_profile(self: Transport, identity_id: str) -> Call[dict[str, Any]]:
        """The identity's own fields (name, form, language, level, sponsor, ``elevated_at``,
        metadata...), as ``GET /v1/identities/{id}/profile`` shows them."""
        data = yield from self._json("GET", f"/v1/identities/{segment(identity_id)}/profile")
        return dict(data)

    def _proven(
        self,
        method: str,
        path: str,
        body: Any,
        identity_id: str | None,
        root_key: Ed25519PrivateKey | None,
    ) -> Call[Any]:
        """A mutation that the identity's root proof may authorise: proven when a root key and
        an identity are given (and the identity is agent_root), sent with the bearer alone
        otherwise."""
        if root_key is not None and identity_id is not None:
            authority = yield from CoreCalls.authority.gen(self, identity_id)
            if authority.mode == "agent_root":
                answer = yield from CoreCalls.root_request.gen(
                    self,
                    method,
                    path,
                    json_body=body,
                    did=authority.did,
                    root_key=root_key,
                    sequence=authority.next_sequence,
                )
                return answer
        response = yield from self._send(method, path, body=body)
        return response.json() if response.content else None
