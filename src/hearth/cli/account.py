"""``hearth register`` and ``hearth recover``: an identity rooted in 24 words, kept in a home.

Register makes the words, derives the keys from them, proves the keys and the proof-of-work to
the service, and keeps the profile, the bearer and the sealed keys in the home. The words are
given to the user once (on the terminal, or in ``--mnemonic-file``) and stored nowhere else:
they are the identity's last resort, and recover turns them back into a working bearer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx2
import typer
from rich.markup import escape
from rich.panel import Panel
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from hearth.client import HearthClient, HearthError
from hearth.client.backup import BackupError, SealedBackup, seal_backup
from hearth.client.mnemonic_keys import IdentityKeys, MnemonicError, derive_keys, new_mnemonic

from .client_config import (
    BASE_URL_OPTION,
    HOME_ENV,
    HOME_OPTION,
    JSON_OPTION,
    PASSPHRASE_FILE_OPTION,
    Profile,
    ensure_home,
    errors,
    failure,
    home_dir,
    http_failure,
    keys_path,
    load_profile,
    output,
    print_json,
    print_table,
    read_mnemonic,
    read_passphrase,
    resolve_base_url,
    save_api_key,
    save_profile,
    save_sealed_keys,
    usage_error,
)
from .files import write_private


def _seal(keys: IdentityKeys, passphrase: str) -> SealedBackup:
    with errors.status("Sealing the keys under the passphrase (argon2id)..."):
        try:
            return seal_backup(keys, passphrase)
        except BackupError as exc:
            usage_error(str(exc))


def _deliver_mnemonic(words: str, mnemonic_file: Path | None, show: bool) -> None:
    """The words, once: to the file (0600, never over an existing file) and/or the terminal."""
    if mnemonic_file is not None:
        try:
            write_private(mnemonic_file, (words + "\n").encode("utf-8"))
        except OSError as exc:
            errors.print(
                f"[red]error:[/red] cannot write {escape(str(mnemonic_file))}: {exc.strerror}"
            )
            show = True  # the words must not be lost
        else:
            errors.print(f"Recovery words written to {mnemonic_file} (mode 0600).", markup=False)
    if show:
        listed = [f"{n:>2}. {word:<8}" for n, word in enumerate(words.split(), start=1)]
        rows = ["  ".join(listed[start : start + 4]) for start in range(0, len(listed), 4)]
        errors.print(
            Panel(
                "\n".join(rows),
                title="[bold]Your 24 recovery words[/bold]",
                subtitle="shown once",
                border_style="yellow",
                expand=False,
            )
        )
        errors.print(
            "[bold yellow]Write these words down and keep them offline.[/bold yellow] They are "
            "the only way to recover this identity; they are not stored anywhere and will not "
            "be shown again."
        )


def _print_identity(agent_id: str, did: str, project_id: str, as_json: bool) -> None:
    """What register and recover print: the identity, never its words or bearer."""
    if as_json:
        print_json({"agent_id": agent_id, "did": did, "project_id": project_id})
        return
    output.print(f"agent id: {agent_id}", markup=False)
    output.print(f"did: {did}", markup=False)


def register(
    *,
    name: str = typer.Option(..., "--name", help="The identity's display name."),
    base_url: str | None = BASE_URL_OPTION,
    home: Path | None = HOME_OPTION,
    show_mnemonic: bool | None = typer.Option(
        None,
        "--show-mnemonic/--no-show-mnemonic",
        help="Print the recovery words on standard error (default: only when it is a "
        "terminal and no --mnemonic-file is given).",
        show_default=False,
    ),
    mnemonic_file: Path | None = typer.Option(
        None,
        "--mnemonic-file",
        help="Write the recovery words to this new file (mode 0600) instead of the terminal.",
        show_default=False,
    ),
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
    runtime_provider: str = typer.Option("local", "--runtime-provider"),
    capabilities: list[str] | None = typer.Option(
        None, "--capability", help="A capability to declare (repeatable).", show_default=False
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Register a new identity with keys derived from fresh recovery words (self-service)."""
    home_path = home_dir(home)
    if load_profile(home_path) is not None or keys_path(home_path).exists():
        usage_error(f"{home_path} already holds an identity; use another --home (or ${HOME_ENV})")
    if mnemonic_file is not None and mnemonic_file.exists():
        usage_error(f"{mnemonic_file} exists; the recovery words are never written over a file")
    if show_mnemonic is not None:
        show = show_mnemonic
    elif mnemonic_file is not None:
        show = False
    elif sys.stderr.isatty():
        show = True
    else:
        # Redirected standard error usually ends in a log file, where the words must never be.
        usage_error(
            "standard error is not a terminal: pass --mnemonic-file PATH for the recovery "
            "words (or --show-mnemonic to print them anyway)"
        )
    if not show and mnemonic_file is None:
        usage_error("--no-show-mnemonic needs --mnemonic-file: the words must go somewhere")
    url = resolve_base_url(base_url, None)
    passphrase = read_passphrase(passphrase_file, confirm=True)

    words = new_mnemonic()
    keys = derive_keys(words)
    sealed = _seal(keys, passphrase)

    with HearthClient(url) as client:
        try:
            difficulty = client.plans().pow_difficulty_bits
            with Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TextColumn("{task.completed:,} hashes tried"),
                TimeElapsedColumn(),
                console=errors,
                transient=True,
            ) as progress:
                task = progress.add_task(f"Proof-of-work ({difficulty} bits)", total=None)
                tried = [0]

                def report(count: int) -> None:
                    tried[0] = count
                    progress.update(task, completed=count)

                body = client.prepare_registration(
                    keys,
                    name,
                    runtime_provider=runtime_provider,
                    capabilities=capabilities or None,
                    pow_difficulty=difficulty,
                    progress=report,
                )
            errors.print(f"Proof-of-work ({difficulty} bits) solved after {tried[0]:,} hashes.")
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
        try:
            registration = client.register_prepared(body)
        except (HearthError, httpx2.HTTPError) as exc:
            if isinstance(exc, HearthError) and exc.status < 500:
                http_failure(exc)  # refused: no identity exists, so the words are worthless
            # No answer, or a server/gateway failure: the identity may exist. Keep the words,
            # so that recover can find it; registering again would make a second identity.
            _deliver_mnemonic(words, mnemonic_file, show)
            failure(
                f"the registration may have happened ({exc}). Do not register again: run "
                "`hearth recover` with these recovery words."
            )

    _deliver_mnemonic(words, mnemonic_file, show)
    _keep(
        home_path,
        Profile(
            base_url=url,
            project_id=registration.project_id,
            identity_id=registration.agent_id,
            did=registration.did,
            name=registration.display_name,
            key_id=registration.key_id,
        ),
        registration.api_key,
        sealed,
        overwrite=False,
        done=f"registered {registration.did}",
        advice=". Recover it with `hearth recover` and your recovery words.",
    )
    _print_identity(registration.agent_id, registration.did, registration.project_id, as_json)
    errors.print(f"Profile, bearer and sealed keys stored in {home_path}.", markup=False)


def _keep(
    home: Path,
    profile: Profile,
    api_key: str,
    sealed: SealedBackup,
    *,
    overwrite: bool,
    done: str,
    advice: str = "",
) -> None:
    """Write the sealed keys, the bearer and the profile; a failure says what was ``done``."""
    try:
        save_sealed_keys(
            keys_path(ensure_home(home)),
            sealed,
            agent_id=profile.identity_id,
            did=profile.did,
            overwrite=overwrite,
        )
        save_api_key(home, api_key)
        save_profile(home, profile)
    except OSError as exc:
        failure(f"{done}, but cannot write to {home}: {exc}{advice}")


def recover(
    *,
    base_url: str | None = BASE_URL_OPTION,
    home: Path | None = HOME_OPTION,
    mnemonic_file: Path | None = typer.Option(
        None,
        "--mnemonic-file",
        help="Read the 24 recovery words from this file (default: a hidden prompt).",
        show_default=False,
    ),
    did: str | None = typer.Option(
        None, "--did", help="The identity to recover (default: found by signed discovery)."
    ),
    device_label: str = typer.Option(
        "", "--device-label", help="Names the new bearer: recovered:<label>."
    ),
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
    force: bool = typer.Option(
        False, "--force", help="Replace a different identity already kept in this home."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Recover an identity from its recovery words: a new bearer, stored in the home."""
    home_path = home_dir(home)
    existing = load_profile(home_path)
    url = resolve_base_url(base_url, existing)
    try:
        keys = derive_keys(read_mnemonic(mnemonic_file))
    except MnemonicError as exc:
        usage_error(f"these are not valid recovery words: {exc}")

    with HearthClient(url) as client:
        try:
            if did is None:
                did = _discover_one(client, keys)
            if existing is not None and existing.did != did and not force:
                usage_error(
                    f"{home_path} holds another identity ({existing.did}); "
                    "use another --home, or --force to replace it"
                )
            passphrase = read_passphrase(passphrase_file, confirm=True)
            sealed = _seal(keys, passphrase)
            recovered = client.recover(did, keys.signing, device_label=device_label)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)

    # Deliberate replacement: the home held this identity, none, or --force was given.
    _keep(
        home_path,
        Profile(
            base_url=url,
            project_id=recovered.project_id,
            identity_id=recovered.agent_id,
            did=recovered.did,
            name=recovered.name,
            key_id=recovered.key_id,
        ),
        recovered.api_key,
        sealed,
        overwrite=True,
        done=f"recovered {recovered.did}",
    )
    _print_identity(recovered.agent_id, recovered.did, recovered.project_id, as_json)
    errors.print(
        f"Recovered; a new bearer, the profile and sealed keys are in {home_path}.", markup=False
    )


def _discover_one(client: HearthClient, keys: IdentityKeys) -> str:
    candidates = client.discover(keys.signing)
    if not candidates:
        failure(f"no identity at {client.base_url} is rooted in these recovery words")
    if len(candidates) > 1:
        table = Table(title="Identities rooted in these words")
        for column in ("did", "name", "key created"):
            table.add_column(column)
        for candidate in candidates:
            table.add_row(
                escape(candidate.did), escape(candidate.name), candidate.key_created_at or ""
            )
        print_table(table, err=True)
        usage_error("several identities are rooted in these words; choose one with --did")
    return candidates[0].did
