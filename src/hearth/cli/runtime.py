"""``hearth runtime``: provision, list, show and follow runtimes, and run a ``self`` runtime's
think-loop on this machine (``hearth runtime run``; docs/runtimes.md, "Self custody").

``run`` needs:

- this home's profile and bearer (``hearth register`` or ``recover`` wrote them), or
  ``--base-url`` for another service address;
- the user's keys, for K_master and the signing key, loaded as ``hearth bridge`` loads them:
  ``--mnemonic-file`` (the 24 words), else the sealed key file of the home opened with the
  passphrase from ``--passphrase-file``, ``$HEARTH_PASSPHRASE`` or a prompt. Writes are signed
  by the identity's root key (kid ``primary``), or by a registered device key:
  ``--signing-key PEM --kid KID``;
- a provider, called here: ``--provider anthropic|openai`` (default: the runtime's
  ``llm.provider``) with ``--model`` (default: the runtime's ``llm.model``) and the user's own
  api key from ``$ANTHROPIC_API_KEY`` / ``$OPENAI_API_KEY`` (or ``--api-key-env NAME``);
  ``--llm-base-url`` points the SDK elsewhere (a proxy, a test server). Or ``--command CMD``:
  any program that reads the prompt on stdin and writes the reply on stdout.

Exit status of ``run``: 0 after Ctrl-C/SIGTERM, or after ``--once`` with no failed cycle; 1
when ``--once`` failed its cycle or the service refuses the loop for good; 2 for a usage error.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import sys
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx2
import typer
from rich.markup import escape
from rich.table import Table

from hearth.adds import AddsError
from hearth.adds.keys import load_ed25519_private_key
from hearth.client import HearthClient, HearthError, Runtime
from hearth.client.backup import BackupError, open_backup
from hearth.client.mnemonic_keys import IdentityKeys, MnemonicError, derive_keys
from hearth.client.runtimes import ROOT_KID
from hearth.client.self_runtime import (
    AnthropicProvider,
    CommandProvider,
    LoopStopped,
    OpenAIProvider,
    Provider,
    SelfRuntime,
    SelfRuntimeConfig,
)

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    PASSPHRASE_FILE_OPTION,
    client_for,
    errors,
    failure,
    home_dir,
    http_failure,
    keys_path,
    load_sealed_keys,
    output,
    print_table,
    read_mnemonic,
    read_passphrase,
    usage_error,
)
from .key_text import decode_key, standard_b64

app = typer.Typer(
    help="Provision and inspect runtimes; run a self runtime's think-loop on this machine.",
    no_args_is_help=True,
)

API_KEY_ENVS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
MODES = ("self", "bridged", "trusted")
JSON_OPTION = typer.Option(False, "--json", help="JSON instead of text.")


def _record(runtime: Runtime) -> dict[str, Any]:
    data = asdict(runtime)
    data.pop("control_token", None)  # printed once, on its own line, by `create`
    return data


def _print_runtime(runtime: Runtime) -> None:
    fields = (
        ("id", runtime.id),
        ("name", runtime.name),
        ("mode", runtime.mode),
        ("status", runtime.status),
        ("identity_id", runtime.identity_id),
        ("region", runtime.region),
        ("llm", json.dumps(runtime.llm) if runtime.llm else None),
        ("last_seen_at", runtime.last_seen_at),
        ("last_thought_at", runtime.last_thought_at),
        ("thought_count_24h", runtime.thought_count_24h),
        ("last_error", runtime.last_error),
        ("deleted", runtime.deleted),
    )
    for name, value in fields:
        output.print(f"{name}: {escape(str(value if value is not None else '-'))}")


@app.command("create")
def create(  # noqa: PLR0917 - typer reads the options from the signature
    name: str = typer.Option(..., "--name", help="Display name (surfaces in the wake)."),
    mode: str = typer.Option("self", "--mode", help="self (default), bridged or trusted."),
    identity: str | None = typer.Option(
        None,
        "--identity",
        help="Bind to this identity (id or DID; default: this home's identity).",
        show_default=False,
    ),
    provider: str | None = typer.Option(None, "--provider", help="llm.provider."),
    model: str | None = typer.Option(None, "--model", help="llm.model."),
    vault_key: str | None = typer.Option(
        None, "--vault-key", help="llm.vault_key: the vault secret holding a hosted provider key."
    ),
    bridge_pubkey: str | None = typer.Option(
        None,
        "--bridge-pubkey",
        help="bridged: the bridge's Ed25519 public key (base64 or base64url, as "
        "`hearth keys generate` prints it).",
        show_default=False,
    ),
    bridge_key_id: str | None = typer.Option(
        None,
        "--bridge-key-id",
        help="bridged: the bridge key's id (UUID; default: a new one).",
        show_default=False,
    ),
    region: str | None = typer.Option(None, "--region", help="Region code (default lhr)."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Provision a runtime (a self runtime by default, bound to this home's identity)."""
    if mode not in MODES:
        usage_error(f"--mode is one of {', '.join(MODES)}")
    llm = {
        k: v
        for k, v in (("provider", provider), ("model", model), ("vault_key", vault_key))
        if v is not None
    }
    bridge = None
    if bridge_key_id is not None and bridge_pubkey is None:
        usage_error("--bridge-key-id names the key of --bridge-pubkey; give that too")
    if bridge_pubkey is not None:
        try:
            raw = decode_key(bridge_pubkey, what="--bridge-pubkey")
        except ValueError as exc:
            usage_error(str(exc))
        # The id only names the key among the runtime's; a fresh one serves when none is given.
        bridge = {"pubkey": standard_b64(raw), "key_id": bridge_key_id or str(uuid.uuid4())}
    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            runtime = client.runtime_create(
                name,
                mode,
                identity_id=identity or profile.identity_id,
                llm=llm or None,
                bridge=bridge,
                region=region,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        record = _record(runtime)
        if runtime.control_token:
            # Inside the one JSON document, so that scripts can parse standard output; it is
            # printed here once, as without --json, and stored nowhere by this command.
            record["control_token"] = runtime.control_token
            errors.print("control token (shown once, in the JSON; keep it for `hearth bridge`)")
        typer.echo(json.dumps(record, indent=2))
        return
    _print_runtime(runtime)
    if runtime.control_token:
        # Shown once, never stored by this command: the bridge reads it from a file.
        errors.print("control token (shown once; keep it for `hearth bridge`):")
        typer.echo(runtime.control_token)


@app.command("list")
def list_runtimes(  # noqa: PLR0917 - typer reads the options from the signature
    mode: str | None = typer.Option(None, "--mode", help="Only this custody tier."),
    status: str | None = typer.Option(None, "--status", help="Only this status."),
    identity: str | None = typer.Option(None, "--identity", help="Only this identity's."),
    include_deleted: bool = typer.Option(False, "--include-deleted", help="Deleted ones too."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """List the project's runtimes, newest first."""
    client, _ = client_for(home_dir(home), base_url)
    items: list[Runtime] = []
    with client:
        try:
            cursor: str | None = None
            while True:
                page = client.runtimes(
                    mode=mode,
                    status=status,
                    identity_id=identity,
                    include_deleted=include_deleted,
                    cursor=cursor,
                    limit=200,
                )
                items.extend(page.items)
                cursor = page.next_cursor
                if cursor is None:
                    break
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        typer.echo(json.dumps([_record(r) for r in items], indent=2))
        return
    table = Table("id", "name", "mode", "status", "last_seen_at", "last_thought_at")
    for r in items:
        table.add_row(
            r.id, escape(r.name), r.mode, r.status, r.last_seen_at or "-", r.last_thought_at or "-"
        )
    print_table(table)


@app.command("show")
def show(
    runtime_id: str = typer.Argument(..., help="The runtime's id."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Show a runtime with its liveness fields."""
    client, _ = client_for(home_dir(home), base_url)
    with client:
        try:
            runtime = client.runtime(runtime_id)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        typer.echo(json.dumps(_record(runtime), indent=2))
    else:
        _print_runtime(runtime)


@app.command("events")
def events(
    runtime_id: str = typer.Argument(..., help="The runtime's id."),
    limit: int = typer.Option(100, "--limit", min=1, max=200, help="Events to show."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """The runtime's event log, oldest first (one page)."""
    client, _ = client_for(home_dir(home), base_url)
    with client:
        try:
            page = client.runtime_events(runtime_id, limit=limit)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        typer.echo(json.dumps([asdict(e) for e in page.items], indent=2))
        return
    for event in page.items:
        details = json.dumps(event.details, sort_keys=True) if event.details else ""
        output.print(f"{event.created_at} {event.event} {escape(details)}")


# ---- run ---------------------------------------------------------------------------------------


def _user_keys(
    mnemonic_file: Path | None, home: Path, passphrase_file: Path | None
) -> IdentityKeys:
    """The user's keys, from the words or the home's sealed key file (as ``hearth bridge``)."""
    if mnemonic_file is not None:
        try:
            return derive_keys(read_mnemonic(mnemonic_file))
        except MnemonicError as exc:
            usage_error(f"the mnemonic file does not hold valid recovery words: {exc}")
    path = keys_path(home)
    if not path.exists():
        usage_error(f"no sealed keys at {path}: pass --mnemonic-file or --home")
    sealed, _ = load_sealed_keys(path)
    passphrase = read_passphrase(passphrase_file, confirm=False)
    try:
        return open_backup(sealed.blob_base64, sealed.key_derivation, passphrase)
    except BackupError as exc:
        usage_error(f"cannot open {path}: {exc}")


def _provider(  # noqa: PLR0917 - the options of `run` that choose the provider
    runtime: Runtime,
    provider: str | None,
    model: str | None,
    command: str | None,
    api_key_env: str | None,
    llm_base_url: str | None,
    llm_max_retries: int,
    llm_timeout: float,
) -> Provider:
    llm = runtime.llm or {}
    model = model or (llm.get("model") if isinstance(llm.get("model"), str) else None)
    if command is not None:
        argv = shlex.split(command)
        if not argv:
            usage_error("--command is empty")
        return CommandProvider(argv, timeout=llm_timeout, model=model)
    name = provider or llm.get("provider")
    if name not in API_KEY_ENVS:
        usage_error(
            f"no provider to call here: pass --provider anthropic|openai or --command CMD "
            f"(the runtime's llm.provider is {name!r})"
        )
    if not model:
        usage_error("no model: pass --model (the runtime's llm has none)")
    env = api_key_env or API_KEY_ENVS[name]
    api_key = os.environ.get(env, "").strip()
    if not api_key:
        usage_error(f"no {name} api key: set ${env} (the key stays on this machine)")
    cls = AnthropicProvider if name == "anthropic" else OpenAIProvider
    return cls(
        model=model,
        api_key=api_key,
        base_url=llm_base_url,
        timeout=llm_timeout,
        max_retries=llm_max_retries,
    )


@app.command("run")
def run(  # noqa: PLR0917 - typer reads the options from the signature
    runtime_id: str = typer.Option(..., "--runtime", help="The self runtime's id."),
    provider: str | None = typer.Option(
        None, "--provider", help="anthropic or openai (default: the runtime's llm.provider)."
    ),
    model: str | None = typer.Option(
        None, "--model", help="The model (default: the runtime's llm.model)."
    ),
    command: str | None = typer.Option(
        None,
        "--command",
        help="Any provider: a program that reads the prompt on stdin and writes the reply on "
        "stdout (split like a shell command line, run without a shell).",
    ),
    api_key_env: str | None = typer.Option(
        None,
        "--api-key-env",
        help="Read the provider key from this variable (default ANTHROPIC_API_KEY or "
        "OPENAI_API_KEY).",
    ),
    llm_base_url: str | None = typer.Option(
        None, "--llm-base-url", help="The provider's API address (default: the SDK's)."
    ),
    llm_max_retries: int = typer.Option(
        2, "--llm-max-retries", min=0, help="The SDK's own retries of 429 and 5xx."
    ),
    llm_timeout: float = typer.Option(60.0, "--llm-timeout", min=0.1, help="Seconds per call."),
    mnemonic_file: Path | None = typer.Option(
        None,
        "--mnemonic-file",
        help="Derive the keys from the 24 words in this file (default: the home's sealed keys).",
    ),
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
    signing_key: Path | None = typer.Option(
        None,
        "--signing-key",
        help="Sign thoughts with this registered device key (PKCS#8 PEM) instead of the root key.",
    ),
    kid: str | None = typer.Option(None, "--kid", help="The --signing-key's registered kid."),
    once: bool = typer.Option(False, "--once", help="Process at most one message, then exit."),
    poll: float = typer.Option(2.0, "--poll", min=0.01, help="Seconds between idle polls."),
    heartbeat: float = typer.Option(30.0, "--heartbeat", min=0.1, help="Heartbeat interval, s."),
    recent: int = typer.Option(20, "--recent", min=1, max=100, help="Thoughts in each prompt."),
    max_backoff: float = typer.Option(60.0, "--max-backoff", min=0.01, help="Longest backoff, s."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every cycle's outcome."),
) -> None:
    """Run a self runtime's think-loop here: K_master, the keys and the provider stay on this
    machine; the service stores ciphertext and liveness only."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if (signing_key is None) != (kid is None):
        usage_error("--signing-key and --kid go together")
    home_path = home_dir(home)
    client, _ = client_for(home_path, base_url)
    with client:
        try:
            runtime = client.runtime(runtime_id)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
        if runtime.mode != "self":
            failure(f"the runtime {runtime.id} is {runtime.mode}: `run` runs self runtimes only")
        chosen = _provider(
            runtime,
            provider,
            model,
            command,
            api_key_env,
            llm_base_url,
            llm_max_retries,
            llm_timeout,
        )
        keys = _user_keys(mnemonic_file, home_path, passphrase_file)
        signer, signer_kid = keys.signing, ROOT_KID
        if signing_key is not None and kid is not None:
            try:
                signer = load_ed25519_private_key(signing_key.read_bytes())
            except OSError as exc:
                usage_error(f"cannot read the signing key {signing_key}: {exc.strerror}")
            except (AddsError, ValueError) as exc:
                usage_error(f"{signing_key} is not an Ed25519 private key (PKCS#8 PEM): {exc}")
            signer_kid = kid
        config = SelfRuntimeConfig(
            runtime_id=runtime.id,
            k_master=keys.strand_master,
            signing_key=signer,
            signing_key_id=signer_kid,
            recent=recent,
            poll_seconds=poll,
            heartbeat_seconds=heartbeat,
            max_backoff=max_backoff,
        )
        failed = _loop(client, config, chosen, once=once)
    if once and failed:
        raise typer.Exit(1)


def _loop(
    client: HearthClient, config: SelfRuntimeConfig, provider: Provider, *, once: bool
) -> int:
    # SIGTERM stops the loop as Ctrl-C does: a message being thought about is released first.
    # SIGINT is set too, not inherited: a process started in the background (`cmd &`, setsid,
    # an editor's or scheduler's job) begins with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler of its own, so Ctrl-C sent to it would do nothing.
    previous = {
        signum: signal.signal(signum, signal.default_int_handler)
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    loop = SelfRuntime(client, config, provider)
    try:
        failed = loop.run(once=once)
    except LoopStopped as exc:
        failure(str(exc))
    except KeyboardInterrupt:
        errors.print("runtime loop stopped")
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        close = getattr(provider, "close", None)
        if close is not None:
            close()
    errors.print(f"processed {loop.processed} message(s), {loop.failed} failed")
    return failed


def main() -> None:
    app()


if __name__ == "__main__":
    main()
