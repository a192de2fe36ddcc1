"""The key types every part of hearth names, from the one place allowed to import them.

Only `hearth.proofs` and `hearth.adds` import `cryptography.hazmat` (../shared/STYLE.md); the
server, the client and the CLI name keys through this module, so a change of crypto library is a
change here.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

__all__ = [
    "Ed25519PrivateKey",
    "Ed25519PublicKey",
    "InvalidSignature",
    "X25519PrivateKey",
    "X25519PublicKey",
]
