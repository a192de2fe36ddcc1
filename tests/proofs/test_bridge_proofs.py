"""The pure bridge proofs (``hearth.proofs.bridge``): golden values for the handshake bytes, the
session secret and the reply HMAC (each also recomputed here independently, from the recipe as
docs/bridge.md writes it), request checks, the replay window and the thought AAD the bridge uses."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import b64_encode, bridge_request_digest, format_timestamp
from hearth.proofs.bridge import (
    ReplayGuard,
    RequestRefused,
    bridge_auth_bytes,
    bridge_auth_digest,
    build_request,
    parse_request,
    reply_mac,
    reply_mac_ok,
    session_secret,
    sign_bridge_auth,
    verify_bridge_auth,
    verify_request,
)
from hearth.proofs.thoughts import thought_aad

RUNTIME = "6f1c1b62-4c1e-4c55-9d0e-0a4b8f3c2d11"
REQUEST = "0b5a3b4e-7a8d-4c2f-9e61-5d3c2b1a0f99"
SERVER_NONCE = b64_encode(bytes(range(32)))
BRIDGE_NONCE = b64_encode(bytes(range(32, 64)))
TOKEN = "hrt_golden-control-token"


def _hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 by hand, independent of the cryptography package."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


# --- golden values ------------------------------------------------------------------------------


def test_auth_bytes_golden() -> None:
    expected = (
        b"bridge-auth/v1\x00" + RUNTIME.encode() + b"\x00" + SERVER_NONCE.encode() + b"\x00"
    ) + BRIDGE_NONCE.encode()
    assert bridge_auth_bytes(RUNTIME, SERVER_NONCE, BRIDGE_NONCE) == expected
    assert bridge_auth_digest(RUNTIME, SERVER_NONCE, BRIDGE_NONCE).hex() == (
        "c71d8d8bb9002d724900aa3825daef6d0a92520b8952194cf286a0c4b3f33803"
    )
    assert (
        bridge_auth_digest(RUNTIME, SERVER_NONCE, BRIDGE_NONCE) == hashlib.sha256(expected).digest()
    )


def test_session_secret_golden() -> None:
    secret = session_secret(TOKEN, SERVER_NONCE, BRIDGE_NONCE)
    assert secret.hex() == "b0b52b1d23489e3d5af018ee137eed83f551690e36ac779331ddfa38b134760a"
    assert secret == _hkdf_sha256(TOKEN.encode(), bytes(range(64)), b"bridge-session/v1", 32)
    # Every input counts: the token, each nonce, and their order.
    assert session_secret(TOKEN + "x", SERVER_NONCE, BRIDGE_NONCE) != secret
    assert session_secret(TOKEN, BRIDGE_NONCE, SERVER_NONCE) != secret
    with pytest.raises(ValueError, match="32 bytes"):
        session_secret(TOKEN, b64_encode(bytes(16)), BRIDGE_NONCE)


def test_reply_mac_golden() -> None:
    secret = bytes(range(32))
    result = {"plaintext": "aGVsbG8="}
    mac = reply_mac(secret, REQUEST, result)
    assert mac == "QtV2+XqZPnlXt0DcQvjHTGe04XwK4trRkzSbWEZRYiE="
    by_hand = hmac.new(
        secret, REQUEST.encode() + b'\x00{"plaintext":"aGVsbG8="}', hashlib.sha256
    ).digest()
    assert mac == b64_encode(by_hand)
    assert reply_mac_ok(secret, REQUEST, result, mac)
    assert not reply_mac_ok(secret, REQUEST, {"plaintext": "aGVsbG9="}, mac)
    assert not reply_mac_ok(secret, str(uuid.uuid4()), result, mac)
    assert not reply_mac_ok(bytes(32), REQUEST, result, mac)
    assert not reply_mac_ok(secret, REQUEST, result, None)
    assert not reply_mac_ok(secret, REQUEST, result, "é")
    # Key order does not matter (RFC 8785), values do.
    two = {"nonce": "AAAAAAAAAAAAAAAA", "ciphertext": "AQID"}
    assert reply_mac(secret, REQUEST, two) == reply_mac(
        secret, REQUEST, dict(reversed(two.items()))
    )


def test_request_digest_golden() -> None:
    context = {"strand_id": RUNTIME, "thought_seq": 7, "issued_at": "2026-11-20T12:00:00.000Z"}
    digest = bridge_request_digest(REQUEST, "decrypt", "aGVsbG8=", b64_encode(bytes(12)), context)
    assert digest.hex() == "f037f526a35d5bdab4a8d66bfc61eb2c48bb585c5e17e6302d059cd69ff62690"
    canonical = b'{"issued_at":"2026-11-20T12:00:00.000Z","strand_id":"' + RUNTIME.encode()
    canonical += b'","thought_seq":7}'
    by_hand = b"\x00".join(
        (REQUEST.encode(), b"decrypt", b"aGVsbG8=", b64_encode(bytes(12)).encode(), canonical)
    )
    assert digest == hashlib.sha256(by_hand).digest()


def test_thought_aad_golden() -> None:
    # The bridge opens and seals with hearth.proofs.thoughts; its AAD is DESIGN.md's.
    assert thought_aad(RUNTIME, 42) == b"strand-thought/v1\x00" + RUNTIME.encode() + b"\x0042"


# --- handshake signature ------------------------------------------------------------------------


def test_bridge_auth_signature() -> None:
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes_raw()
    signature = sign_bridge_auth(key, RUNTIME, SERVER_NONCE, BRIDGE_NONCE)
    assert verify_bridge_auth(public, signature, RUNTIME, SERVER_NONCE, BRIDGE_NONCE)
    other = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    assert not verify_bridge_auth(other, signature, RUNTIME, SERVER_NONCE, BRIDGE_NONCE)
    assert not verify_bridge_auth(public, signature, str(uuid.uuid4()), SERVER_NONCE, BRIDGE_NONCE)
    assert not verify_bridge_auth(public, signature, RUNTIME, BRIDGE_NONCE, SERVER_NONCE)
    assert not verify_bridge_auth(public, "not base64!", RUNTIME, SERVER_NONCE, BRIDGE_NONCE)


# --- requests -----------------------------------------------------------------------------------


def _request(key: Ed25519PrivateKey, **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "op": "decrypt",
        "payload": b"ciphertext bytes",
        "nonce": bytes(12),
        "strand_id": RUNTIME,
        "thought_seq": 3,
        "issued_at": format_timestamp(datetime.now(UTC)),
    }
    values.update(overrides)
    return build_request(key, **values)


def test_a_built_request_parses_and_verifies_and_any_change_breaks_it() -> None:
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes_raw()
    message = _request(key)
    request = parse_request(message)
    verify_request(public, request)
    assert request.payload_bytes() == b"ciphertext bytes"

    for field, value in (
        ("op", "encrypt"),
        ("ciphertext_or_plaintext", b64_encode(b"other bytes")),
        ("nonce", b64_encode(b"\x01" * 12)),
        ("request_id", str(uuid.uuid4())),
    ):
        changed = {**message, field: value}
        with pytest.raises(RequestRefused) as refused:
            verify_request(public, parse_request(changed))
        assert refused.value.code == "bad_signature"
    changed = json.loads(json.dumps(message))
    changed["context"]["strand_id"] = str(uuid.uuid4())
    with pytest.raises(RequestRefused, match="not signed"):
        verify_request(public, parse_request(changed))
    with pytest.raises(RequestRefused, match="not signed"):
        verify_request(Ed25519PrivateKey.generate().public_key().public_bytes_raw(), request)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"op": "sign"}, "unknown_op"),
        ({"request_id": "nope"}, "malformed_request"),
        ({"request_id": REQUEST.upper()}, "malformed_request"),
        ({"nonce": b64_encode(bytes(11))}, "malformed_request"),
        ({"nonce": 12}, "malformed_request"),
        ({"ciphertext_or_plaintext": "not base64!"}, "malformed_request"),
        ({"context": {"strand_id": RUNTIME, "thought_seq": 1}}, "malformed_request"),
        (
            {"context": {"strand_id": RUNTIME, "thought_seq": -1, "issued_at": "x"}},
            "malformed_request",
        ),
        (
            {"context": {"strand_id": RUNTIME, "thought_seq": True, "issued_at": "x"}},
            "malformed_request",
        ),
        (
            {"context": {"strand_id": RUNTIME, "thought_seq": 1, "issued_at": "yesterday"}},
            "malformed_request",
        ),
        ({"extra": 1}, "malformed_request"),
    ],
)
def test_malformed_requests_are_refused(change: dict[str, Any], code: str) -> None:
    message = {**_request(Ed25519PrivateKey.generate()), **change}
    with pytest.raises(RequestRefused) as refused:
        parse_request(message)
    assert refused.value.code == code


def test_build_request_refuses_bad_arguments() -> None:
    key = Ed25519PrivateKey.generate()
    with pytest.raises(ValueError, match="unknown bridge op"):
        _request(key, op="sign")
    with pytest.raises(ValueError, match="12 bytes"):
        _request(key, nonce=bytes(16))


# --- the replay window --------------------------------------------------------------------------


def test_replay_guard_window_and_uniqueness() -> None:
    guard = ReplayGuard(window_s=60)
    now = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)

    def at(seconds: float) -> str:
        return format_timestamp(now + timedelta(seconds=seconds))

    guard.check("a", at(0), now)
    with pytest.raises(RequestRefused) as refused:
        guard.check("a", at(0), now + timedelta(seconds=1))
    assert refused.value.code == "replayed_request"
    guard.check("b", at(-60), now)  # the edge of the window is inside it
    guard.check("c", at(60), now)
    for offset in (-60.5, 61):
        with pytest.raises(RequestRefused) as refused:
            guard.check(str(offset), at(offset), now)
        assert refused.value.code == "stale_request"
    assert len(guard) == 3  # refused requests are not remembered
    # Ids are forgotten once their request can no longer be fresh: memory stays bounded, and a
    # late replay is refused as stale.
    later = now + timedelta(seconds=121)
    with pytest.raises(RequestRefused) as refused:
        guard.check("a", at(0), later)
    assert refused.value.code == "stale_request"
    assert len(guard) == 0
    with pytest.raises(RequestRefused, match="RFC 3339"):
        guard.check("d", "noon", now)
