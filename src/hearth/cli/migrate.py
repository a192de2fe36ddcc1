"""``hearth import life.car --to URL``: an exported life recreated on another service (its
objects granted to that service's X25519 key, a fresh key proof by this home's root key)."""

from __future__ import annotations

from pathlib import Path

import httpx2
import typer

from hearth.client import HearthError

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    PASSPHRASE_FILE_OPTION,
    client_for,
    failure,
    hidden_prompt,
    home_dir,
    http_failure,
    load_profile,
    open_home_keys,
    open_root_key,
    output,
    print_json,
    usage_error,
)


def import_life(  # noqa: PLR0917 - typer reads options from the signature
    path: Path = typer.Argument(..., help="The exported CAR file.", show_default=False),
    to: str = typer.Option(
        ..., "--to", help="The address of the service to import into.", show_default=False
    ),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="HEARTH_TARGET_API_KEY",
        help="A project bearer on that service (default: asked, hidden).",
        show_default=False,
    ),
    name: str | None = typer.Option(
        None, "--name", help="The identity's name there.", show_default=False
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Import an exported life into another service (hearth import life.car --to URL).

    The export is granted to that service's X25519 key, a fresh key proof is signed with this
    home's root key, and the service recreates the identity (its ids, memories and
    attestations kept)."""
    from hearth.client import HearthClient  # noqa: PLC0415 (the client stack: only when used)
    from hearth.client.export import import_export  # noqa: PLC0415

    home_path = home_dir(home)
    profile = load_profile(home_path)
    if profile is None:
        usage_error(f"import needs a home with keys; {home_path} has no profile")
    keys = open_home_keys(home_path, profile, passphrase_file)
    bearer = api_key or hidden_prompt(
        f"project bearer on {to}", confirm=False, instead="--api-key or HEARTH_TARGET_API_KEY"
    )
    try:
        with HearthClient(to, api_key=bearer) as target, path.open("rb") as source:
            imported = import_export(target, source, keys=keys, display_name=name)
    except (HearthError, httpx2.HTTPError) as exc:
        http_failure(exc)
    except OSError as exc:
        failure(f"cannot read {path}: {exc.strerror}")
    except ValueError as exc:
        failure(str(exc))
    if as_json:
        print_json(
            {
                "file": str(path),
                "service": to,
                "identity_id": imported.authority.identity_id,
                "did": imported.authority.did,
                "root": imported.root,
                "records": imported.records,
            }
        )
        return
    records = sum(imported.records.values())
    output.print(
        f"imported {imported.authority.did} into {to}: {records} records; root {imported.root}"
    )


def move(  # noqa: PLR0917 - typer reads options from the signature
    to: str = typer.Option(
        ..., "--to", help="The address of the service it lives on now.", show_default=False
    ),
    did: str | None = typer.Option(
        None,
        "--did",
        help="The identity's DID there (default: the same DID, as an import keeps it).",
        show_default=False,
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Record on this home's service that its identity moved to another (after hearth import).

    Signed with the root key. Its mutations there are refused from then on (410, with where it
    went); nothing is deleted."""
    home_path = home_dir(home)
    client, profile = client_for(home_path, base_url)
    root_key = open_root_key(home_path, profile, passphrase_file)
    try:
        with client:
            moved = client.move_identity(
                profile.identity_id, service=to, did=did or profile.did, root_key=root_key
            )
    except (HearthError, httpx2.HTTPError) as exc:
        http_failure(exc)
    if as_json:
        print_json(
            {
                "identity_id": moved.identity_id,
                "did": moved.did,
                "status": moved.status,
                "moved_to": moved.moved_to,
                "runtimes_stopped": list(moved.runtimes_stopped),
            }
        )
        return
    stopped = len(moved.runtimes_stopped)
    output.print(
        f"{moved.did} moved to {moved.moved_to.get('service')}"
        + (f" ({stopped} runtime{'s' if stopped != 1 else ''} stopped here)" if stopped else "")
    )
