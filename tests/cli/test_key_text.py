"""Keys on the command line are read in either base64 alphabet, padded or not, and refused
when mixed, non-canonical, or of the wrong length."""

from __future__ import annotations

import base64
import os

import pytest

from hearth.cli.key_text import decode_key, standard_b64


def test_both_alphabets_padded_or_not_name_the_same_key() -> None:
    # Bytes whose encodings hold both alphabet-specific characters.
    raw = bytes([0xFB, 0xFF, 0xBF]) * 10 + os.urandom(2)
    standard = base64.b64encode(raw).decode()
    url = base64.urlsafe_b64encode(raw).decode()
    assert "+" in standard or "/" in standard
    assert "-" in url or "_" in url
    for text in (standard, url, standard.rstrip("="), url.rstrip("="), f" {url}\n"):
        assert decode_key(text, what="--key") == raw
    assert standard_b64(raw) == standard


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "neither"),
        ("abc+def_" + "A" * 35, "neither"),  # both alphabets at once
        ("not base64!", "neither"),
        (base64.b64encode(bytes(16)).decode(), "16 bytes, not 32"),
        # 32 zero bytes end in "A=": "B=" sets unused bits, a second spelling of the same key.
        ("A" * 42 + "B=", "canonical"),
    ],
)
def test_refusals_name_the_option(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as caught:
        decode_key(text, what="--bridge-pubkey")
    assert "--bridge-pubkey" in str(caught.value)
