"""Golden vectors: regenerated and compared byte for byte, then re-derived independently."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from multiformats import CID, multihash

from hearth.adds import b64url_decode, validate

from .generate import HERE, render

FILES = render()


# Golden files with a generator of their own (their tests regenerate and compare them).
OWN_GENERATOR = ("wake/", "openapi/")


def test_generator_reproduces_every_committed_file() -> None:
    on_disk = {
        str(path.relative_to(HERE)): path.read_bytes()
        for path in HERE.rglob("*")
        if path.is_file()
        and path.suffix in {".json", ".pem"}
        and not str(path.relative_to(HERE)).startswith(OWN_GENERATOR)
    }
    assert sorted(on_disk) == sorted(FILES)
    for name, content in FILES.items():
        assert on_disk[name] == content, f"{name} changed: run `make vectors` and review the diff"


INDEX = json.loads(FILES["index.json"])


@pytest.mark.parametrize("name", sorted(INDEX["documents"]))
def test_vector_rederived_without_hearth_code(name: str) -> None:
    """Signed bytes, signature and CID recomputed with the reference libraries only."""
    data = FILES[f"{name}.json"]
    document = json.loads(data)
    assert rfc8785.dumps(document) == data  # the file is its own canonical form
    unsigned = {**document, "signature": dict(document["signature"])}
    value = unsigned["signature"].pop("value")
    message = b"adds-document/0.1\x00" + rfc8785.dumps(unsigned)
    assert hashlib.sha256(message).hexdigest() == INDEX["documents"][name]["signed_bytes_sha256"]
    public_key = Ed25519PublicKey.from_public_bytes(
        b64url_decode(document["signature"]["public_key"])
    )
    public_key.verify(b64url_decode(value), message)  # raises if it does not hold
    expected = CID("base32", 1, "raw", multihash.digest(data, "sha2-256"))
    assert str(expected) == INDEX["documents"][name]["cid"]
    result = validate(data)
    assert result.valid
    assert result.cid == str(expected)


def test_primitive_vectors_match_independent_encoders() -> None:
    primitives = INDEX["primitives"]
    for text, encoded in primitives["base64url"].items():
        assert encoded == base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    for name, data in {"empty": b"", "hello": b"hello"}.items():
        cid = CID("base32", 1, "raw", multihash.digest(data, "sha2-256"))
        assert primitives["cid"][name] == str(cid)
    tricky = json.loads(primitives["canonical"])
    assert rfc8785.dumps(tricky).decode() == primitives["canonical"]
