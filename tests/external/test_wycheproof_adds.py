"""Wycheproof AES-GCM, X25519 and HKDF-SHA256 through hearth's own wrappers (hearth.adds.aead).

The wrappers are what chunk encryption and key wrapping use, so these vectors test the code
that runs, not the library beneath it:

- AES-GCM: ADDS uses AES-256 with a 96-bit nonce and a 128-bit tag only. Those cases must
  encrypt to ``ct || tag`` and decrypt back (``valid``), or fail to decrypt (``invalid``); every
  other key or nonce size must be refused by the wrapper, whatever the case's verdict.
- X25519: ``valid`` cases must give ``shared``; ``acceptable`` cases whose shared secret is all
  zero (small-order public keys) must be refused, as key wrapping requires; the other
  ``acceptable`` cases (twist points, non-canonical u) must give ``shared``.
- HKDF-SHA256: ``valid`` cases must give ``okm``; ``invalid`` ones (output too long) must be
  refused.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hearth.adds import AddsError
from hearth.adds.aead import (
    aes_gcm_decrypt,
    aes_gcm_encrypt,
    aes_gcm_encrypt_into,
    hkdf_sha256,
    x25519_shared,
)
from tests.support.external_suites import available, cases_or_missing, suite

WYCHEPROOF = "wycheproof"
FOLDER = Path("testvectors_v1")


def _load(name: str) -> dict[str, Any]:
    text = (suite(WYCHEPROOF) / FOLDER / name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _cases(name: str) -> list[object]:
    folder = available(WYCHEPROOF)
    if folder is None:
        return cases_or_missing(WYCHEPROOF, None)
    data = json.loads((folder / FOLDER / name).read_text(encoding="utf-8"))
    cases: list[object] = []
    for group in data["testGroups"]:
        shared = {k: v for k, v in group.items() if k != "tests"}
        for test in group["tests"]:
            cases.append(pytest.param({**shared, **test}, id=f"tc{test['tcId']}"))
    return cases


def _code(excinfo: pytest.ExceptionInfo[AddsError]) -> str:
    return excinfo.value.problems[0].code


# --- AES-GCM --------------------------------------------------------------------------------

AES_GCM = "aes_gcm_test.json"


def _adds_parameters(case: dict[str, Any]) -> bool:
    return (case["keySize"], case["ivSize"], case["tagSize"]) == (256, 96, 128)


@pytest.mark.parametrize("case", _cases(AES_GCM))
def test_aes_gcm(case: dict[str, Any] | None) -> None:
    suite(WYCHEPROOF)
    assert case is not None
    key, iv, aad = (bytes.fromhex(case[n]) for n in ("key", "iv", "aad"))
    msg, sealed = bytes.fromhex(case["msg"]), bytes.fromhex(case["ct"] + case["tag"])
    if not _adds_parameters(case):
        expected = "crypto.key_length" if case["keySize"] != 256 else "crypto.nonce_length"
        with pytest.raises(AddsError) as excinfo:
            aes_gcm_encrypt(key, iv, aad, msg)
        assert _code(excinfo) == expected
        with pytest.raises(AddsError) as excinfo:
            aes_gcm_decrypt(key, iv, aad, sealed)
        assert _code(excinfo) == expected
        with pytest.raises(AddsError) as excinfo:
            aes_gcm_encrypt_into(key, iv, aad, msg, memoryview(bytearray(len(msg) + 16)))
        assert _code(excinfo) == expected
        return
    if case["result"] == "valid":
        assert aes_gcm_encrypt(key, iv, aad, msg) == sealed
        out = memoryview(bytearray(len(sealed)))  # publish's path: into a store's buffer
        assert aes_gcm_encrypt_into(key, iv, aad, msg, out) == len(sealed)
        assert out == sealed
        assert aes_gcm_decrypt(key, iv, aad, sealed) == msg
    else:
        assert case["result"] == "invalid"
        with pytest.raises(AddsError) as excinfo:
            aes_gcm_decrypt(key, iv, aad, sealed)
        assert _code(excinfo) == "crypto.decrypt_failed"


def test_aes_gcm_counts() -> None:
    """Pins how many cases apply to ADDS (the README says 66) and how many are refused."""
    data = _load(AES_GCM)
    counts: Counter[str] = Counter()
    for group in data["testGroups"]:
        for test in group["tests"]:
            applies = _adds_parameters(group)
            counts[f"{'applies' if applies else 'refused'}/{test['result']}"] += 1
    assert counts == {
        "applies/valid": 39,
        "applies/invalid": 27,
        "refused/valid": 190,
        "refused/invalid": 60,
    }
    assert data["numberOfTests"] == sum(counts.values())


# --- X25519 ---------------------------------------------------------------------------------

X25519 = "x25519_test.json"
ZERO = "00" * 32


@pytest.mark.parametrize("case", _cases(X25519))
def test_x25519(case: dict[str, Any] | None) -> None:
    suite(WYCHEPROOF)
    assert case is not None
    private, public = bytes.fromhex(case["private"]), bytes.fromhex(case["public"])
    if case["shared"] == ZERO:
        assert case["result"] == "acceptable"
        assert "ZeroSharedSecret" in case["flags"]
        with pytest.raises(AddsError) as excinfo:
            x25519_shared(private, public)
        assert _code(excinfo) == "crypto.small_order"
    else:
        assert case["result"] in {"valid", "acceptable"}
        assert x25519_shared(private, public).hex() == case["shared"]


def test_x25519_counts() -> None:
    data = _load(X25519)
    counts: Counter[str] = Counter()
    for group in data["testGroups"]:
        for test in group["tests"]:
            outcome = "refused" if test["shared"] == ZERO else "matched"
            counts[f"{test['result']}/{outcome}"] += 1
    assert counts == {"valid/matched": 264, "acceptable/matched": 223, "acceptable/refused": 31}


# --- HKDF-SHA256 ----------------------------------------------------------------------------

HKDF = "hkdf_sha256_test.json"


@pytest.mark.parametrize("case", _cases(HKDF))
def test_hkdf_sha256(case: dict[str, Any] | None) -> None:
    suite(WYCHEPROOF)
    assert case is not None
    ikm, salt, info = (bytes.fromhex(case[n]) for n in ("ikm", "salt", "info"))
    if case["result"] == "valid":
        assert hkdf_sha256(ikm, salt, info, case["size"]).hex() == case["okm"]
    else:
        assert case["result"] == "invalid"
        with pytest.raises(AddsError) as excinfo:
            hkdf_sha256(ikm, salt, info, case["size"])
        assert _code(excinfo) == "crypto.hkdf_length"


def test_hkdf_sha256_counts() -> None:
    data = _load(HKDF)
    results = Counter(t["result"] for g in data["testGroups"] for t in g["tests"])
    assert results == {"valid": 83, "invalid": 3}
