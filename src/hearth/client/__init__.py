"""Client side of hearth: the SDK (httpx2), key derivation from a mnemonic, sealed key backups."""

from .sdk import (
    Authority,
    BackupRecord,
    Bootstrapped,
    BootstrapStatus,
    Candidate,
    CreatedKey,
    Expression,
    HearthClient,
    HearthError,
    KeyRecord,
    Plans,
    Recovered,
    Registration,
    Wallet,
)

__all__ = [
    "Authority",
    "BackupRecord",
    "BootstrapStatus",
    "Bootstrapped",
    "Candidate",
    "CreatedKey",
    "Expression",
    "HearthClient",
    "HearthError",
    "KeyRecord",
    "Plans",
    "Recovered",
    "Registration",
    "Wallet",
]
