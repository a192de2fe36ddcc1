"""``AddsClient``: a provider node's ADDS routes as calls, for the CLI and the HTTP block store.

    PUT  /v1/adds/blocks/{cid}           put_block     201 stored, 200 already held
    GET  /v1/adds/blocks/{cid}           get_block     the bytes (the caller hashes them)
    HEAD /v1/adds/blocks/{cid}           has_block     200 held, 404 or 410 not held
    GET  /v1/adds/blocks?limit=&cursor=  block_page    {"items": [{"cid", "size"}], "next_cursor"}
    GET  /ipfs/{cid}?format=raw|car      gateway_block the IPFS trustless gateway: the block, or a
    HEAD /ipfs/{cid}?format=raw|car      gateway_has   CAR holding it (public: no bearer needed)
    POST /v1/adds/documents              submit        {"cid"}: checked against the document's
    GET  /v1/adds/documents/{cid}        document      bytes, refused unless they hash to cid
    GET  /v1/adds/heads/{head_id}        head          the node's resolution, or None (404)
    GET  /v1/adds/provider-record        provider_record
    POST /v1/adds/receipts               receipt

Every failure is a ``hearth.client.errors.ClientError``: ``TransportError`` when no answer came,
``AddsRefusal`` when the node answered with a refusal (its ``error``/``message`` JSON, or the
start of a text answer), ``InvalidAnswer`` when it answered what the route does not promise.
The node is not trusted: blocks are read up to a limit and documents are checked against their
CIDs. The bearer is sent as ``Authorization: Bearer <token>`` and never appears in an error.
Requests marked idempotent (all the block routes) are retried after a connection failure,
``retries`` times, waiting ``backoff``, then twice that, and so on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx2

from hearth.adds import validate
from hearth.adds.cid import cid_for_bytes

from .errors import AddsRefusal, InvalidAnswer, TransportError

__all__ = ["BLOCKS_PATH", "AddsClient", "Answer"]

BLOCKS_PATH = "/v1/adds/blocks"
DOCUMENTS_PATH = "/v1/adds/documents"
GATEWAY_PATH = "/ipfs"
_RETRYABLE = (httpx2.NetworkError, httpx2.RemoteProtocolError, httpx2.ConnectTimeout)
# A refusal's body, or a success whose body is not wanted, is read this far and no further.
_ERROR_BODY_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Answer:
    """A node's answer: its status and (as much of) its body (HEAD has none)."""

    status: int
    content: bytes


class AddsClient:
    """The ADDS routes of the provider node at ``base_url``.

    ``bearer``: sent with every request, never shown. ``client``: an httpx2.Client to use (not
    closed by ``close``); by default the client makes its own with ``timeout``. Thread-safe.
    """

    def __init__(
        self,
        base_url: str,
        *,
        bearer: str | None = None,
        client: httpx2.Client | None = None,
        timeout: float | httpx2.Timeout = 30.0,
        retries: int = 0,
        backoff: float = 0.2,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._bearer = bearer
        self._headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        self._own_client = client is None
        self._client = client if client is not None else httpx2.Client(timeout=timeout)
        self._retries = retries
        self._backoff = backoff

    def __repr__(self) -> str:
        return f"AddsClient({self.base_url!r})"

    def __enter__(self) -> AddsClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def redact(self, text: str) -> str:
        """``text`` with the bearer replaced by ``[bearer]``."""
        return text.replace(self._bearer, "[bearer]") if self._bearer else text

    # -- the one request path --

    def send(
        self,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        limit: int | None = None,
        keep_body: bool = True,
        idempotent: bool = False,
    ) -> Answer:
        """The node's answer to one request, whatever its status. A success's body is read whole,
        or up to ``limit`` bytes (more is an InvalidAnswer); a refusal's, or a body not wanted
        (``keep_body`` false), up to 64 KiB, the rest dropped. An idempotent request is retried
        after a connection failure."""
        url = self.base_url + path
        all_headers = {**self._headers, **(headers or {})}
        attempt = 0
        while True:
            try:
                with self._client.stream(
                    method, url, content=content, headers=all_headers, params=params
                ) as response:
                    status = response.status_code
                    if method == "HEAD":
                        return Answer(status, b"")
                    if 200 <= status < 300 and keep_body:
                        return Answer(status, _read_limited(response, limit, method, url))
                    return Answer(status, _read_prefix(response, _ERROR_BODY_LIMIT))
            except _RETRYABLE as exc:
                if not idempotent:
                    raise self._transport(method, url, exc, "") from exc
                if attempt >= self._retries:
                    after = f" after {attempt + 1} attempt(s)"
                    raise self._transport(method, url, exc, after) from exc
                time.sleep(self._backoff * 2**attempt)
                attempt += 1
            except httpx2.HTTPError as exc:
                raise self._transport(method, url, exc, "") from exc

    def refusal(self, request: str, answer: Answer) -> AddsRefusal:
        """The refusal ``answer`` is, to ``request`` (``METHOD /path``), with no bearer in it."""
        try:
            body: Any = json.loads(answer.content)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            text = answer.content[:200].decode("utf-8", errors="replace").strip()
            return AddsRefusal(
                answer.status,
                base_url=self.base_url,
                request=request,
                code=None,
                reason=self.redact(text) or None,
                body=self.redact(text),
            )
        fields = body
        code = body.get("error")
        if isinstance(code, dict):  # {"error": {"code": ..., "message": ...}} also seen
            fields, code = code, code.get("code")
        message = fields.get("message")
        return AddsRefusal(
            answer.status,
            base_url=self.base_url,
            request=request,
            code=self.redact(code[:100]) if isinstance(code, str) else None,
            reason=self.redact(message[:500]) if isinstance(message, str) else None,
            details=body.get("details"),
            body=body,
        )

    def _transport(
        self, method: str, url: str, exc: httpx2.HTTPError, after: str
    ) -> TransportError:
        text = f"{method} {url}: {type(exc).__name__}{after}: {self.redact(str(exc))}"
        return TransportError(text, method=method, url=url)

    # -- blocks --

    def put_block(self, cid: str, data: bytes) -> Answer:
        """Upload a block; the answer, whatever its status (the block store judges it)."""
        headers = {"Content-Type": "application/octet-stream"}
        path = f"{BLOCKS_PATH}/{cid}"
        return self.send(
            "PUT", path, content=data, headers=headers, keep_body=False, idempotent=True
        )

    def get_block(self, cid: str, *, limit: int) -> Answer:
        return self.send("GET", f"{BLOCKS_PATH}/{cid}", limit=limit, idempotent=True)

    def has_block(self, cid: str) -> Answer:
        return self.send("HEAD", f"{BLOCKS_PATH}/{cid}", idempotent=True)

    def block_page(self, *, page_size: int, cursor: str | None, limit: int) -> Answer:
        params = {"limit": str(page_size)}
        if cursor is not None:
            params["cursor"] = cursor
        return self.send("GET", BLOCKS_PATH, params=params, limit=limit, idempotent=True)

    # -- the IPFS trustless gateway --

    def gateway_block(self, cid: str, *, limit: int, car: bool = False) -> Answer:
        """The block as the node's IPFS trustless gateway answers it: its bytes, or with ``car``
        a CARv1 holding it (the caller verifies either against the CID)."""
        path, headers = _gateway(cid, car)
        return self.send("GET", path, headers=headers, limit=limit, idempotent=True)

    def gateway_has(self, cid: str, *, car: bool = False) -> Answer:
        """The gateway's HEAD: 200 when it serves the block, 404 when not."""
        path, headers = _gateway(cid, car)
        return self.send("HEAD", path, headers=headers, idempotent=True)

    # -- documents, heads, records, receipts --

    def submit(self, document: bytes) -> str:
        """POST a document; its CID as the node names it (refused unless it is ours)."""
        expected = validate(document).cid
        answer = self.send(
            "POST",
            DOCUMENTS_PATH,
            content=document,
            headers={"Content-Type": "application/json"},
        )
        if answer.status not in (200, 201):
            raise self.refusal(f"POST {DOCUMENTS_PATH}", answer)
        try:
            cid = json.loads(answer.content)["cid"]
        except (ValueError, KeyError, TypeError):
            raise InvalidAnswer(f"{self.base_url}: the document answer has no cid") from None
        if cid != expected:
            raise InvalidAnswer(f"{self.base_url} named the document {cid}, not {expected}")
        return str(cid)

    def document(self, cid: str) -> bytes:
        """A document's bytes by CID, refused unless they hash to that CID."""
        path = f"{DOCUMENTS_PATH}/{cid}"
        answer = self.send("GET", path)
        if answer.status != 200:
            raise self.refusal(f"GET {path}", answer)
        if cid_for_bytes(answer.content) != cid:
            raise InvalidAnswer(f"{self.base_url} answered {cid} with other bytes: refused")
        return answer.content

    def head(self, head_id: str, issuer_key: str) -> dict[str, Any] | None:
        """The node's resolution of (issuer_key, head_id), or None when it holds no head."""
        path = f"/v1/adds/heads/{quote(head_id, safe='')}"
        answer = self.send("GET", path, params={"issuer_key": issuer_key})
        if answer.status == 404:
            return None
        if answer.status != 200:
            raise self.refusal(f"GET {path}", answer)
        try:
            body = json.loads(answer.content)
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("candidates"), list):
            raise InvalidAnswer(f"{self.base_url}: GET {path}: not a head resolution")
        body.pop("_welcomed", None)
        return body

    def provider_record(self) -> bytes:
        """The node's current provider record, as it sent it (the caller validates it)."""
        path = "/v1/adds/provider-record"
        answer = self.send("GET", path)
        if answer.status != 200:
            raise self.refusal(f"GET {path}", answer)
        return answer.content

    def inventory(self) -> dict[str, Any]:
        """What the bearer's project holds on the node: its blocks, and its documents by kind."""
        return self._json_of("GET", "/v1/adds/inventory")

    def documents(
        self, *, kind: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """One page of the project's documents (``items``, ``next_cursor``), newest first."""
        params = {
            name: str(value)
            for name, value in (("kind", kind), ("cursor", cursor), ("limit", limit))
            if value is not None
        }
        return self._json_of("GET", DOCUMENTS_PATH, params=params)

    def _json_of(
        self, method: str, path: str, *, params: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        answer = self.send(method, path, params=params, idempotent=method == "GET")
        if answer.status != 200:
            raise self.refusal(f"{method} {path}", answer)
        try:
            data = json.loads(answer.content)
        except ValueError:
            raise InvalidAnswer(f"{self.base_url}{path}: the answer is not JSON") from None
        if not isinstance(data, dict):
            raise InvalidAnswer(f"{self.base_url}{path}: the answer is not a JSON object")
        return data

    def receipt(self, items: list[str], commitment: str) -> bytes:
        """A storage receipt for ``items`` from the node, as it sent it."""
        path = "/v1/adds/receipts"
        body = json.dumps({"items": items, "commitment": commitment}).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        answer = self.send("POST", path, content=body, headers=headers)
        if answer.status not in (200, 201):
            raise self.refusal(f"POST {path}", answer)
        return answer.content


def _gateway(cid: str, car: bool) -> tuple[str, dict[str, str]]:
    """The gateway URL's path and headers: ``format`` and ``Accept`` both, as the trustless gateway
    specification advises a client."""
    media = "application/vnd.ipld.car" if car else "application/vnd.ipld.raw"
    return f"{GATEWAY_PATH}/{quote(cid, safe='')}?format={'car' if car else 'raw'}", {
        "Accept": media
    }


def _read_limited(response: httpx2.Response, limit: int | None, method: str, url: str) -> bytes:
    if limit is None:
        return response.read()
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise InvalidAnswer(
            f"{method} {url}: the provider announced {declared} bytes, more than {limit}"
        )
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            raise InvalidAnswer(f"{method} {url}: the provider sent more than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _read_prefix(response: httpx2.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk[: limit - size])
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)
