"""Client side of hearth: key derivation from a mnemonic and sealed key backups (pure code)."""
