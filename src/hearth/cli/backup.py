"""``hearth backup``: the home's sealed keys, kept by the service as ciphertext.

``push`` sends the sealed key file of the home as it is (the service never sees the
passphrase); a home without one seals the keys of ``--mnemonic-file`` first. ``pull`` fetches
the latest backup, opens it with the passphrase to prove it is whole and belongs to this
identity, and writes it (still sealed) into the home or to ``-o FILE``.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import typer

from hearth.client import HearthError
from hearth.client.backup import BackupError, SealedBackup, open_backup, seal_backup
from hearth.client.mnemonic_keys import IdentityKeys, MnemonicError, derive_keys

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    PASSPHRASE_FILE_OPTION,
    client_for,
    errors,
    failure,
    home_dir,
    http_failure,
    keys_path,
    load_sealed_keys,
    output,
    print_json,
    read_mnemonic,
    read_passphrase,
    save_sealed_keys,
    usage_error,
)

app = typer.Typer(help="Encrypted key backups kept by the service.", no_args_is_help=True)


def _check_root(keys: IdentityKeys, root_public_key: str | None, did: str) -> None:
    if root_public_key is not None and keys.signing_public_b64 != root_public_key:
        failure(f"these keys are not the root keys of {did}")


@app.command("push")
def push(  # noqa: PLR0917 - typer reads options from the signature
    label: str | None = typer.Option(None, "--label", help="A label for this backup."),
    mnemonic_file: Path | None = typer.Option(
        None,
        "--mnemonic-file",
        help="Seal the keys of these recovery words afresh (needed when the home has no "
        "sealed key file; replaces the home's file).",
        show_default=False,
    ),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Store the home's sealed keys with the service (ciphertext only)."""
    home_path = home_dir(home)
    local = keys_path(home_path)
    client, profile = client_for(home_path, base_url)
    with client:
        try:
            if mnemonic_file is None and local.exists():
                sealed, record = load_sealed_keys(local)
                if record.get("agent_id") not in (None, profile.identity_id):
                    usage_error(f"{local} holds the keys of another identity")
            elif mnemonic_file is None:
                usage_error(
                    f"{home_path} has no sealed key file; pass --mnemonic-file to seal the "
                    "keys of your recovery words"
                )
            else:
                try:
                    keys = derive_keys(read_mnemonic(mnemonic_file))
                except MnemonicError as exc:
                    usage_error(f"these are not valid recovery words: {exc}")
                authority = client.authority(profile.identity_id)
                _check_root(keys, authority.root_public_key, profile.did)
                passphrase = read_passphrase(passphrase_file, confirm=True)
                with errors.status("Sealing the keys under the passphrase (argon2id)..."):
                    try:
                        sealed = seal_backup(keys, passphrase)
                    except BackupError as exc:
                        usage_error(str(exc))
                save_sealed_keys(
                    local, sealed, agent_id=profile.identity_id, did=profile.did, overwrite=True
                )
            stored = client.backup_push(profile.identity_id, sealed, label=label)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
        except OSError as exc:
            failure(f"cannot write {local}: {exc}")
    if as_json:
        print_json({"id": stored.id, "did": profile.did, "created_at": stored.created_at})
        return
    output.print(
        f"backup {stored.id} stored for {profile.did} at {stored.created_at}", markup=False
    )


@app.command("pull")
def pull(  # noqa: PLR0917 - typer reads options from the signature
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Write the sealed keys to this file instead of the home.",
        show_default=False,
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out file."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Fetch the latest backup, check it opens with the passphrase, and keep it sealed."""
    home_path = home_dir(home)
    if out is not None and out.exists() and not force:
        usage_error(f"{out} exists (use --force to replace it)")
    client, profile = client_for(home_path, base_url)
    with client:
        try:
            record = client.backup_pull(profile.identity_id)
            authority = client.authority(profile.identity_id)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    passphrase = read_passphrase(passphrase_file, confirm=False)
    sealed = SealedBackup(record.blob_base64, record.key_derivation)
    with errors.status("Opening the backup (argon2id)..."):
        try:
            keys = open_backup(sealed.blob_base64, sealed.key_derivation, passphrase)
        except BackupError as exc:
            failure(f"cannot open backup {record.id}: {exc}")
    _check_root(keys, authority.root_public_key, profile.did)
    target = out if out is not None else keys_path(home_path)
    try:
        # Into the home deliberately over the old file: this one is proven to open and to hold
        # this identity's root key. An --out file is replaced only with --force.
        save_sealed_keys(
            target,
            sealed,
            agent_id=profile.identity_id,
            did=profile.did,
            overwrite=out is None or force,
        )
    except OSError as exc:
        failure(f"cannot write {target}: {exc}")
    if as_json:
        print_json({"id": record.id, "created_at": record.created_at, "path": str(target)})
        return
    output.print(
        f"backup {record.id} of {record.created_at} checked and written to {target}", markup=False
    )
