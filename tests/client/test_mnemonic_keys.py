"""Keys from a 24-word mnemonic: BIP-39 vectors, checks, and an independently computed golden."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from mnemonic import Mnemonic

from hearth.client.mnemonic_keys import (
    IdentityKeys,
    KeyMaterialError,
    MnemonicError,
    check_mnemonic,
    derive_keys,
    new_mnemonic,
)

# The valid all-zero-entropy 24-word mnemonic.
ZERO_WORDS = " ".join(["abandon"] * 23 + ["art"])

# Published BIP-39 English vectors, 24-word entries (trezor/python-mnemonic vectors.json; the
# seed is for passphrase "TREZOR"). Copied from the publication, not computed here.
TREZOR_24 = [
    (
        "0000000000000000000000000000000000000000000000000000000000000000",
        ZERO_WORDS,
        "bda85446c68413707090a52022edd26a1c9462295029f2e60cd7c4f2bbd3097170af7a4d73245cafa9c3c"
        "ca8d561a7c3de6f5d4a10be8ed2a5e608d68f92fcc8",
    ),
    (
        "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
        "legal winner thank year wave sausage worth useful legal winner thank year wave sausage "
        "worth useful legal winner thank year wave sausage worth title",
        "bc09fca1804f7e69da93c2f2028eb238c227f2e9dda30cd63699232578480a4021b146ad717fbb7e451ce9e"
        "b835f43620bf5c514db0f8add49f5d121449d3e87",
    ),
    (
        "68a79eaca2324873eacc50cb9c6eca8cc68ea5d936f98787c60c7ebc74e6ce7c",
        "hamster diagram private dutch cause delay private meat slide toddler razor book happy "
        "fancy gospel tennis maple dilemma loan word shrug inflict delay length",
        "64c87cde7e12ecf6704ab95bb1408bef047c22db4cc7491c4271d170a1b213d20b385bc1588d9c7b38f1b39"
        "d415665b8a9030c9ec653d75e65f847d8fc1fc440",
    ),
]

# Pinned results of the independent computation below for ZERO_WORDS, so a change in the
# derivation (or in the libraries under it) shows up as a diff of known values.
ZERO_SEED_HEX = (
    "408b285c123836004f4b8842c89324c1f01382450c0d439af345ba7fc49acf70"
    "5489c6fc77dbd4e3dc1dd8cc6bc9f043db8ada1e243c4a0eafb290d399480840"
)
ZERO_ED25519_PUBLIC_HEX = "d9a0df0988742757d91c745c6438c16217fac8865468172a9337432cfc36e193"
ZERO_X25519_PUBLIC_HEX = "4f9b21544dccb8c6a64109408e8f76874bcf0853d24007a31d1944a7a5d78029"
ZERO_STRAND_MASTER_HEX = "11b66557d7e1aef439a30bcda7de3dc4e6cf5d614a7a861c12d5cc51c24b649b"


def _bip39_seed(words: str, passphrase: str = "") -> bytes:
    # BIP-39: PBKDF2-HMAC-SHA512, 2048 rounds, salt "mnemonic" + passphrase (ASCII inputs here).
    return hashlib.pbkdf2_hmac("sha512", words.encode(), b"mnemonic" + passphrase.encode(), 2048)


def _hkdf_sha256(ikm: bytes, info: bytes, length: int = 32) -> bytes:
    # RFC 5869 by hand: extract with the default salt (HashLen zero bytes), then expand.
    prk = hmac.new(b"\x00" * 32, ikm, hashlib.sha256).digest()
    okm, block, counter = b"", b"", 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        okm += block
        counter += 1
    return okm[:length]


def test_hand_written_hkdf_matches_rfc5869_case_1() -> None:
    # RFC 5869 appendix A.1, with its salt, so the helper above is itself checked.
    ikm = bytes.fromhex("0b" * 22)
    salt = bytes.fromhex("000102030405060708090a0b0c")
    info = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    t1 = hmac.new(prk, info + b"\x01", hashlib.sha256).digest()
    t2 = hmac.new(prk, t1 + info + b"\x02", hashlib.sha256).digest()
    assert (t1 + t2)[:42].hex() == (
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )


@pytest.mark.parametrize(("entropy_hex", "words", "seed_hex"), TREZOR_24)
def test_trezor_vectors(entropy_hex: str, words: str, seed_hex: str) -> None:
    english = Mnemonic("english")
    assert english.to_mnemonic(bytes.fromhex(entropy_hex)) == words
    assert bytes(english.to_entropy(words)).hex() == entropy_hex
    assert Mnemonic.to_seed(words, passphrase="TREZOR").hex() == seed_hex
    # The independent seed computation used by the golden test agrees with the publication.
    assert _bip39_seed(words, "TREZOR").hex() == seed_hex
    assert check_mnemonic(words) == words
    assert check_mnemonic(words.upper()) == words


def test_golden_zero_mnemonic_computed_independently() -> None:
    seed = _bip39_seed(ZERO_WORDS)
    assert seed.hex() == ZERO_SEED_HEX
    ed_seed = _hkdf_sha256(seed, b"hearth/ed25519-root/v1")
    x_private = _hkdf_sha256(seed, b"hearth/x25519-box/v1")
    strand = _hkdf_sha256(seed, b"hearth/strand-master/v1")
    ed_public = Ed25519PrivateKey.from_private_bytes(ed_seed).public_key().public_bytes_raw()
    x_public = X25519PrivateKey.from_private_bytes(x_private).public_key().public_bytes_raw()
    assert ed_public.hex() == ZERO_ED25519_PUBLIC_HEX
    assert x_public.hex() == ZERO_X25519_PUBLIC_HEX
    assert strand.hex() == ZERO_STRAND_MASTER_HEX

    keys = derive_keys(ZERO_WORDS)
    assert keys.signing_public_raw == ed_public
    assert keys.box_public_raw == x_public
    assert keys.strand_master == strand
    assert keys.signing_public_b64 == base64.b64encode(ed_public).decode()
    assert keys.box_public_b64 == base64.b64encode(x_public).decode()
    assert keys.private_material() == {
        "ed25519_private": base64.b64encode(ed_seed).decode(),
        "x25519_private": base64.b64encode(x_private).decode(),
        "strand_master": base64.b64encode(strand).decode(),
    }


def test_deterministic_and_independent() -> None:
    words = new_mnemonic()
    first, second = derive_keys(words), derive_keys(words)
    assert first.private_material() == second.private_material()
    assert first == second
    assert hash(first) == hash(second)
    secrets = [base64.b64decode(v) for v in first.private_material().values()]
    assert len(set(secrets)) == 3
    # None of them is simply a slice of the seed.
    seed = Mnemonic.to_seed(words)
    assert not any(s in (seed[:32], seed[32:]) for s in secrets)
    assert derive_keys(new_mnemonic()) != first


def test_normalised_input_derives_the_same_keys() -> None:
    messy = "  " + ZERO_WORDS.upper().replace(" ", " \t\n ", 3) + "\n"
    assert derive_keys(messy) == derive_keys(ZERO_WORDS)


def test_new_mnemonic_is_24_fresh_valid_words() -> None:
    a, b = new_mnemonic(), new_mnemonic()
    assert len(a.split(" ")) == 24
    assert check_mnemonic(a) == a
    assert a != b


def test_check_mnemonic_normalises_whitespace_case_and_compatibility_forms() -> None:
    messy = "\t ABANDON  Abandon\n" + " ".join(["abandon"] * 21) + "   ＡＲＴ \n"
    assert check_mnemonic(messy) == ZERO_WORDS


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("abandon " * 11 + "about", "expected 24 words, got 12"),  # valid 12-word mnemonic
        (ZERO_WORDS + " art", "expected 24 words, got 25"),
        ("", "expected 24 words, got 0"),
        (ZERO_WORDS.replace("abandon", "abandonn", 1), "word 1 ('abandonn')"),
        (
            " ".join(["abandon"] * 4 + ["zebraa"] + ["abandon"] * 18 + ["art"]),
            "not in the BIP-39 English wordlist: word 5 ('zebraa')",
        ),
        (" ".join(["abandon"] * 24), "checksum mismatch"),
        (" ".join(["art"] + ["abandon"] * 23), "checksum mismatch"),
    ],
)
def test_check_mnemonic_errors(words: str, expected: str) -> None:
    with pytest.raises(MnemonicError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        check_mnemonic(words)
    assert issubclass(MnemonicError, ValueError)


def test_unknown_words_are_all_named() -> None:
    words = ZERO_WORDS.split()
    words[2], words[9] = "abandn", "foo"
    with pytest.raises(MnemonicError) as info:
        derive_keys(" ".join(words))
    assert "word 3 ('abandn')" in str(info.value)
    assert "word 10 ('foo')" in str(info.value)


def test_repr_hides_secrets() -> None:
    keys = derive_keys(ZERO_WORDS)
    shown = [repr(keys), str(keys), f"{keys!r}", repr([keys])]
    material = keys.private_material()
    for text in shown:
        assert "redacted" in text
        assert keys.signing_public_b64 in text
        for value in material.values():
            assert value not in text
            assert base64.b64decode(value).hex() not in text
        assert ZERO_STRAND_MASTER_HEX not in text


def test_private_material_round_trip() -> None:
    keys = derive_keys(new_mnemonic())
    again = IdentityKeys.from_private_material(keys.private_material())
    assert again == keys
    assert again.signing_public_raw == keys.signing_public_raw
    assert again.box_public_raw == keys.box_public_raw
    assert again.strand_master == keys.strand_master


def _material() -> dict[str, str]:
    return derive_keys(ZERO_WORDS).private_material()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.pop("strand_master"), r"missing \['strand_master'\]"),
        (lambda d: d.update(extra="AAAA"), r"unexpected \['extra'\]"),
        (lambda d: d.update(x25519_private=base64.b64encode(b"\x01" * 31).decode()), "got 31"),
        (lambda d: d.update(ed25519_private=base64.b64encode(b"\x01" * 33).decode()), "got 33"),
        (lambda d: d.update(strand_master="AAAA AAAA"), "not valid standard base64"),
        (lambda d: d.update(strand_master=d["strand_master"].rstrip("=")), "not valid"),
        # "AB==" decodes like "AA==" (unused low bits set): non-canonical, refused.
        (lambda d: d.update(strand_master="AB=="), "not canonical"),
        (lambda d: d.update(strand_master=42), "must be a base64 string"),
    ],
)
def test_from_private_material_is_strict(change: object, expected: str) -> None:
    d: dict[str, object] = dict(_material())
    change(d)  # type: ignore[operator]
    with pytest.raises(KeyMaterialError, match=expected):
        IdentityKeys.from_private_material(d)  # type: ignore[arg-type]


def test_from_private_material_refuses_non_mappings() -> None:
    with pytest.raises(KeyMaterialError, match="mapping"):
        IdentityKeys.from_private_material([("a", "b")])  # type: ignore[arg-type]


def test_constructor_checks_types() -> None:
    keys = derive_keys(ZERO_WORDS)
    with pytest.raises(TypeError, match="strand_master"):
        IdentityKeys(signing=keys.signing, box=keys.box, strand_master=b"short")
    with pytest.raises(TypeError, match="signing"):
        IdentityKeys(signing=keys.box, box=keys.box, strand_master=keys.strand_master)  # type: ignore[arg-type]
