"""``hearth mcp``: the MCP server on the user's machine, over stdio, speaking to the service with
the SDK (:class:`~hearth.client.AsyncHearthClient`).

Where it finds its service, bearer and identity (:func:`config_from_home`,
:func:`config_from_env`): the home ``hearth register`` or ``hearth recover`` wrote, or the
environment (``HEARTH_BASE_URL``, ``SERVICE_API_KEY`` or ``SERVICE_API_KEY_FILE``, and for the
identity ``HEARTH_KEYS_FILE`` (a sealed key file) or ``HEARTH_IDENTITY_ID``). The identity's
keys stay on this machine: when the sealed key file and its passphrase (``--passphrase-file``,
``HEARTH_PASSPHRASE_FILE`` or ``HEARTH_PASSPHRASE``) are both there, the root key is opened once
at start and the root-signed tools are offered; it signs each exact request locally, as the SDK
does. The ADDS file tools (``hearth.mcp.adds_files``) need the same keys: the root key signs
what is published, the box key opens its grant. Without them those tools are not offered.
Standard input is the protocol, so nothing is ever asked on it.

Memories stored here declare the channel ``mcp`` (docs/memory.md, "Provenance").
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus

from hearth.client import AsyncHearthClient, HearthError
from hearth.client.backup import BackupError, open_backup
from hearth.client.home import (
    KEYS_FILE,
    HomeError,
    home_dir,
    read_api_key,
    read_profile,
    read_sealed_keys_record,
)
from hearth.client.mnemonic_keys import IdentityKeys
from hearth.client.settings import Settings
from hearth.proofs.key_types import Ed25519PrivateKey, X25519PrivateKey

from .adds_files import AddsIdentity, open_file, publish_file
from .backend import Json, Refused
from .catalogue import updated_resources

__all__ = [
    "KEYS_FILE_ENV",
    "PASSPHRASE_ENV",
    "PASSPHRASE_FILE_ENV",
    "ClientBackend",
    "StdioConfig",
    "config_from_env",
    "config_from_home",
    "serve_stdio",
]

KEYS_FILE_ENV = "HEARTH_KEYS_FILE"
IDENTITY_ENV = "HEARTH_IDENTITY_ID"
PASSPHRASE_ENV = "HEARTH_PASSPHRASE"
PASSPHRASE_FILE_ENV = "HEARTH_PASSPHRASE_FILE"


@dataclass(frozen=True)
class StdioConfig:
    """Where ``hearth mcp`` points. The bearer and the root key are left out of the repr."""

    base_url: str
    api_key: str | None = field(repr=False)
    identity_id: str | None
    did: str | None = None
    name: str | None = None
    project_id: str | None = None
    root_key: Ed25519PrivateKey | None = field(default=None, repr=False)
    source: str = ""
    # The identity's box key (X25519), opened with the root key: it opens the ADDS grants.
    box_key: X25519PrivateKey | None = field(default=None, repr=False)
    # Files holding this server's secrets (key file, bearer, passphrase): never published.
    secret_files: tuple[Path, ...] = ()


def _passphrase_path(passphrase_file: Path | None, environ: Mapping[str, str]) -> Path | None:
    return passphrase_file or (
        Path(environ[PASSPHRASE_FILE_ENV]) if environ.get(PASSPHRASE_FILE_ENV) else None
    )


def _passphrase(passphrase_file: Path | None, environ: Mapping[str, str]) -> str | None:
    path = _passphrase_path(passphrase_file, environ)
    if path is not None:
        try:
            return path.expanduser().read_text(encoding="utf-8").rstrip("\r\n") or None
        except OSError as exc:
            raise ValueError(f"cannot read the passphrase file {path}: {exc.strerror}") from None
    return environ.get(PASSPHRASE_ENV) or None


def _open_root_key(
    keys_path: Path, identity_id: str | None, passphrase: str | None
) -> tuple[IdentityKeys | None, dict[str, Any] | None]:
    """The keys sealed in ``keys_path`` (None without the file or a passphrase) and the
    file's record. A wrong passphrase is an error: a server that silently lost its root tools
    would be harder to understand than one that says why it cannot start."""
    try:
        record = read_sealed_keys_record(keys_path)
    except FileNotFoundError:
        return None, None
    except HomeError as exc:
        raise ValueError(str(exc)) from None
    if identity_id is not None and record.get("agent_id") not in (None, identity_id):
        raise ValueError(f"{keys_path} holds the keys of another identity")
    if passphrase is None:
        return None, record
    try:
        keys = open_backup(record["blob_base64"], record["key_derivation"], passphrase)
    except BackupError as exc:
        raise ValueError(f"cannot open {keys_path}: {exc}") from None
    return keys, record


def config_from_home(
    home: Path | str | None = None,
    *,
    passphrase_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> StdioConfig:
    """The identity of a home; raises ValueError (with a message for the user) when there is
    none or a file of it cannot be read."""
    env = os.environ if environ is None else environ
    path = home_dir(home)
    try:
        profile = read_profile(path)
        api_key = read_api_key(path)
    except HomeError as exc:
        raise ValueError(str(exc)) from None
    if profile is None:
        raise ValueError(f"no identity in {path}: run `hearth register` or `hearth recover`")
    keys, _record = _open_root_key(
        path / KEYS_FILE, profile.identity_id, _passphrase(passphrase_file, env)
    )
    return StdioConfig(
        base_url=profile.base_url,
        api_key=api_key,
        identity_id=profile.identity_id,
        did=profile.did,
        name=profile.name or None,
        project_id=profile.project_id,
        root_key=keys.signing if keys else None,
        box_key=keys.box if keys else None,
        source=f"home {path}",
        secret_files=_secret_files(
            path / KEYS_FILE, path / "api_key", _passphrase_path(passphrase_file, env)
        ),
    )


def config_from_env(
    environ: Mapping[str, str] | None = None, *, passphrase_file: Path | None = None
) -> StdioConfig:
    """The service and bearer of ``Settings.from_env``, the identity of ``HEARTH_KEYS_FILE``'s
    record (else ``HEARTH_IDENTITY_ID``); raises ValueError."""
    env = os.environ if environ is None else environ
    settings = Settings.from_env(env)
    identity_id = env.get(IDENTITY_ENV) or None
    keys = None
    did = None
    keys_file = env.get(KEYS_FILE_ENV)
    if keys_file:
        keys, record = _open_root_key(
            Path(keys_file).expanduser(), identity_id, _passphrase(passphrase_file, env)
        )
        if record is None:
            raise ValueError(f"{KEYS_FILE_ENV}: no sealed key file at {keys_file}")
        identity_id = identity_id or _opt(record.get("agent_id"))
        did = _opt(record.get("did"))
    return StdioConfig(
        base_url=settings.base_url,
        api_key=settings.api_key,
        identity_id=identity_id,
        did=did,
        root_key=keys.signing if keys else None,
        box_key=keys.box if keys else None,
        source="environment",
        secret_files=_secret_files(
            Path(keys_file).expanduser() if keys_file else None,
            Path(env["SERVICE_API_KEY_FILE"]).expanduser()
            if env.get("SERVICE_API_KEY_FILE")
            else None,
            _passphrase_path(passphrase_file, env),
        ),
    )


def _secret_files(*paths: Path | None) -> tuple[Path, ...]:
    return tuple(path for path in paths if path is not None)


def _opt(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _plain(value: Any) -> Any:
    """An SDK answer (a frozen dataclass) as the JSON the service sent."""
    return asdict(value)


class ClientBackend:
    """:class:`~hearth.mcp.backend.Backend` over the SDK, for one identity."""

    def __init__(self, client: AsyncHearthClient, config: StdioConfig) -> None:
        self._client = client
        self._config = config

    @property
    def root(self) -> bool:
        return self._config.root_key is not None and self._config.identity_id is not None

    @asynccontextmanager
    async def _asking(self) -> AsyncIterator[None]:
        """A refusal or an unreachable service as :class:`Refused`."""
        try:
            yield
        except HearthError as exc:
            raise Refused(exc.status, exc.error, exc.message, exc.hint) from None
        except httpx2.HTTPError as exc:
            raise Refused(
                503, "service_unreachable", f"cannot reach the service: {type(exc).__name__}"
            ) from None

    def _identity(self, identity_id: str | None) -> str:
        chosen = identity_id or self._config.identity_id
        if chosen is None:
            raise Refused(
                422,
                "identity_required",
                "This server has no identity of its own: give identity_id.",
            )
        return chosen

    async def whoami(self) -> dict[str, Any]:
        config = self._config
        return {
            "identity_id": config.identity_id,
            "did": config.did,
            "name": config.name,
            "project_id": config.project_id,
            "base_url": config.base_url,
            "transport": "stdio",
            "root_signing": self.root,
            "configured_from": config.source,
        }

    async def memory_store(
        self,
        content: str,
        *,
        key: str | None,
        tier: str | None,
        untrusted: bool,
        project_level: bool,
    ) -> Json:
        agent_id = None if project_level else self._config.identity_id
        root_key = self._config.root_key if tier == "foundational" and agent_id else None
        async with self._asking():
            memory = await self._client.memory_store(
                content,
                tier=tier,
                agent_id=agent_id,
                key=key,
                untrusted=untrusted,
                root_key=root_key,
                channel="mcp",
            )
        return _plain(memory)  # type: ignore[no-any-return]

    async def memory_search(
        self,
        q: str,
        *,
        identity_id: str | None,
        tier: str | None,
        key: str | None,
        limit: int,
    ) -> Sequence[Json]:
        async with self._asking():
            page = await self._client.memory_search(
                q, identity_id=identity_id, tier=tier, key=key, limit=limit
            )
        return [_plain(hit) for hit in page.items]

    async def memory_read(self, memory_id: str) -> Json:
        async with self._asking():
            return _plain(await self._client.memory(memory_id))  # type: ignore[no-any-return]

    async def memory_supersede(self, memory_id: str, content: str, *, untrusted: bool) -> Json:
        async with self._asking():
            old = await self._client.memory(memory_id)
            memory = await self._client.memory_store(
                content,
                agent_id=old.agent_id,
                key=old.key,
                supersedes=memory_id,
                untrusted=untrusted,
                # Replacing an elevated memory of an identity needs its root proof.
                root_key=self._config.root_key if old.tier != "episodic" else None,
                channel="mcp",
            )
        return _plain(memory)  # type: ignore[no-any-return]

    async def memory_elevate(self, memory_id: str) -> Json:
        async with self._asking():
            memory = await self._client.memory_elevate(
                memory_id, "foundational", root_key=self._config.root_key
            )
        return _plain(memory)  # type: ignore[no-any-return]

    async def chronicle(
        self, *, kind: str | None, identity_id: str | None, limit: int
    ) -> Sequence[Json]:
        async with self._asking():
            page = await self._client.chronicle(kind=kind, agent_id=identity_id, limit=limit)
        return [_plain(entry) for entry in page.items]

    async def chronicle_write(self, kind: str, text: str, *, project_level: bool) -> Json:
        agent_id = None if project_level else self._config.identity_id
        async with self._asking():
            entry = await self._client.chronicle_write(kind, text, agent_id=agent_id, channel="mcp")
        return _plain(entry)  # type: ignore[no-any-return]

    async def inbox_send(self, body: str, *, sender: str, identity_id: str | None) -> Json:
        target = self._identity(identity_id)
        async with self._asking():
            return _plain(  # type: ignore[no-any-return]
                await self._client.inbox_send(target, body, sender=sender)
            )

    async def inbox_read(
        self, *, identity_id: str | None, status: str | None, limit: int
    ) -> Sequence[Json]:
        target = self._identity(identity_id)
        async with self._asking():
            page = await self._client.inbox(target, status=status, limit=limit)
        return [_plain(message) for message in page.items]

    async def runtimes(self, *, identity_id: str | None) -> Sequence[Json]:
        async with self._asking():
            page = await self._client.runtimes(identity_id=identity_id, limit=200)
        return [_plain(runtime) for runtime in page.items]

    async def runtime(self, runtime_id: str) -> Json:
        async with self._asking():
            return _plain(await self._client.runtime(runtime_id))  # type: ignore[no-any-return]

    async def wallets(self) -> Sequence[Json]:
        async with self._asking():
            return [_plain(wallet) for wallet in await self._client.wallets()]

    def _adds_identity(self) -> AddsIdentity:
        config = self._config
        if config.root_key is None or config.box_key is None or config.identity_id is None:
            # The catalogue offers the ADDS tools only with the keys; a guard all the same.
            raise Refused(403, "keys_unavailable", "The identity's keys are not open here.")
        return AddsIdentity(
            base_url=config.base_url,
            bearer=config.api_key,
            identity=config.did or config.identity_id,
            signing=config.root_key,
            box=config.box_key,
            secret_files=config.secret_files,
        )

    async def adds_publish(self, path: str, *, media_type: str | None) -> Json:
        who = self._adds_identity()
        # Blocking file and HTTP work (hearth.blockstore's HTTP store), off the event loop.
        return await anyio.to_thread.run_sync(
            lambda: publish_file(who, path, media_type=media_type)
        )

    async def adds_open(
        self, manifest_cid: str, grant_cid: str, path: str, *, overwrite: bool
    ) -> Json:
        who = self._adds_identity()
        return await anyio.to_thread.run_sync(
            lambda: open_file(who, manifest_cid, grant_cid, path, overwrite=overwrite)
        )

    async def wake(self, format: Literal["md", "json"]) -> str:
        async with self._asking():
            if format == "md":
                return await self._client.wake("md", identity_id=self._config.identity_id)
            document = await self._client.wake("json", identity_id=self._config.identity_id)
        # The service's greeting and tutor decorate every JSON answer; they are not the wake's.
        wake = {k: v for k, v in document.items() if k not in ("_welcomed", "_tutor")}
        return json.dumps(wake, ensure_ascii=False)

    async def expression(self) -> Json:
        target = self._identity(None)
        async with self._asking():
            state = await self._client.expression(target)
        return {
            "declared": _plain(state.declared),
            "effective": _plain(state.effective),
            "shaped_by": list(state.shaped_by),
        }


async def relay_voice(client: AsyncHearthClient, identity_id: str, bus: SubscriptionBus) -> None:
    """The identity's voice as resource updates: each change makes the wake (and what else it
    touched) stale for the hosts that listen. Reconnects as long as the server runs; a voice
    that cannot be reached leaves the tools working and the updates silent."""
    while True:
        try:
            stream = await client.voice(identity_id, reconnect=1_000_000, backoff=1.0)
            async with stream:
                async for event in stream:
                    if event.event != "change":
                        continue
                    details = event.data.get("details")
                    changed = updated_resources(
                        event.kind, details if isinstance(details, dict) else {}
                    )
                    for uri in changed:
                        await bus.publish(ResourceUpdated(uri=uri))
        except (HearthError, httpx2.HTTPError):
            await anyio.sleep(5.0)


async def serve_stdio(config: StdioConfig) -> None:
    """Serve MCP on this process's stdin and stdout until the host closes them; with an
    identity, resource updates from its voice for the hosts that listen."""
    from mcp.server.stdio import stdio_server  # noqa: PLC0415 - the transport, when serving
    from mcp.server.subscriptions import (  # noqa: PLC0415
        InMemorySubscriptionBus,
        ListenHandler,
    )

    from .dispatch import build_server  # noqa: PLC0415

    async with AsyncHearthClient(config.base_url, api_key=config.api_key) as client:
        backend = ClientBackend(client, config)
        bus = InMemorySubscriptionBus()
        server = build_server(lambda: backend, "stdio", listen=ListenHandler(bus))
        async with anyio.create_task_group() as tasks:
            if config.identity_id is not None:
                tasks.start_soon(relay_voice, client, config.identity_id, bus)
            async with stdio_server() as (read_stream, write_stream):
                options = server.create_initialization_options()
                await server.run(read_stream, write_stream, options)
            tasks.cancel_scope.cancel()
