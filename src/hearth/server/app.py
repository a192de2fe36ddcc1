"""The one place the service is assembled: ``create_app(settings)`` builds the app (with an
orchestrator worker inside it when asked), ``run_worker(settings)`` an orchestrator worker on its
own (``hearth worker``)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from fastapi import Depends, FastAPI
from starlette.routing import Route

from hearth import __version__

from . import console, edge_guard, error_handlers, openapi, scrape
from .changes import ChangeFeed
from .context import Hearth, JoyIndex
from .db import Database
from .db.migrate import upgrade
from .events import EventBus
from .limiter import make_limiter
from .mcp_http import PATH as MCP_PATH
from .mcp_http import McpEndpoint
from .middleware import ServiceMiddleware
from .observability import Metrics, configure_logging
from .packages import PackageCatalog
from .routes import (
    adds,
    arrival,
    attestations,
    bootstrap,
    bridge,
    forks,
    health,
    identities,
    inbox,
    ipfs_gateway,
    keys,
    life,
    orientation,
    public,
    runtimes,
    strands,
    templates,
    vault,
    voice,
    wake,
    wallets,
)
from .routes import chronicle as chronicle_routes
from .routes import memories as memory_routes
from .semantic.keeper import SemanticKeeper
from .services import wake_cache, wake_stamps
from .services.adds_node import AddsNode
from .services.block_sweep import BlockSweeper
from .settings import Settings
from .tutor import tutor_for

if TYPE_CHECKING:
    from .bridge.hub import BridgeHub
    from .orchestrator import Worker

log = structlog.get_logger("hearth.server")


def create_app(settings: Settings | None = None, *, serving: bool = False) -> FastAPI:
    """The service. ``serving`` is ``hearth serve``'s factory: there ``worker_in_process``
    (default true) runs an orchestrator worker in the process. An app built here otherwise (an
    embedder, a test) runs one only when its settings set ``worker_in_process`` explicitly, so
    that no worker moves runtimes behind code that did not ask for one (docs/orchestrator.md)."""
    settings = settings or Settings()
    worker_in_process = settings.worker_in_process and (
        serving or "worker_in_process" in settings.model_fields_set
    )
    configure_logging(settings.log_format, settings.log_level)
    db = Database(settings.database_url)
    metrics = Metrics()
    hearth = Hearth(
        settings=settings,
        db=db,
        limiter=make_limiter(
            settings.redis_url,
            enabled=settings.limiter_enabled,
            timeout_s=settings.redis_timeout_ms / 1000,
            breaker_s=settings.redis_breaker_seconds,
            registry=metrics.registry,
        ),
        metrics=metrics,
        packages=PackageCatalog(settings.packages_dir),
        joy=JoyIndex(db=db),
        adds=AddsNode(settings, db),
        events=EventBus(
            settings.redis_url,
            registry=metrics.registry,
            queue_size=settings.voice_queue_size,
            timeout_s=settings.redis_timeout_ms / 1000,
            breaker_s=settings.redis_breaker_seconds,
            stamp=wake_stamps.stamper(db, on_failure=wake_cache.forget),
        ),
        semantic=(
            SemanticKeeper(
                db,
                interval=settings.semantic_catch_up_seconds,
                capacity=settings.semantic_cache_vectors,
            )
            if settings.semantic_search
            else None
        ),
    )
    # hearth's MCP server, Streamable HTTP (mcp_http.py, docs/mcp.md): its transport runs while
    # the app does.
    mcp_endpoint = McpEndpoint(hearth)
    # The in-process orchestrator worker, while the app runs.
    worker: Worker | None = None
    # Every change bumps its project's stamp (the bus's `stamp` hook), which keeps every
    # process's wake cache exact; dropping the rendered answers here only frees them sooner.
    hearth.events.add_listener(lambda change: wake_cache.invalidate(change.project_id))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        nonlocal worker
        if settings.is_sqlite:
            _ensure_sqlite_dir(settings.database_url)
        if settings.auto_migrate:
            await upgrade(hearth.db.engine)
        if settings.provider_key_file is not None:
            # A configured key that cannot be read is a configuration error: refuse to start.
            await hearth.adds.keyring.key()
        # The provider record is signed here and on writes, never on a GET: a restart with a
        # new public address or provider id issues one new record (services/provider_record.py).
        await hearth.adds.records.start()
        await hearth.events.start()
        # Entered here and left first on the way out, whatever happens in between.
        mcp_running = AsyncExitStack()
        await mcp_running.enter_async_context(mcp_endpoint.running())
        if worker_in_process:
            from .bridge import hub_for  # noqa: PLC0415

            worker = _worker(settings, hearth.db, hearth.events, hub_for(_app), hearth.metrics)
            worker.start()
        # The in-process worker, for whoever embeds or tests the app (None without one).
        _app.state.worker = worker
        # Temp files of crashed uploads: swept now and then periodically, only once older than
        # the age, since another worker may be writing its own (services/block_sweep.py).
        sweeper = BlockSweeper(
            hearth.adds,
            interval=settings.blocks_sweep_interval_seconds,
            age=settings.blocks_sweep_age_seconds,
        )
        await sweeper.start()
        if hearth.semantic is not None:
            await hearth.semantic.start()
        log.info(
            "service_started",
            version=__version__,
            database=hearth.db.engine.dialect.name,
            limiter=hearth.limiter.backend,
            events=hearth.events.backend,
            pow_difficulty_bits=settings.pow_difficulty_bits,
        )
        try:
            yield
        finally:
            if hearth.semantic is not None:
                await hearth.semantic.stop()
            await mcp_running.aclose()
            await sweeper.stop()
            await hearth.adds.records.stop()
            if worker is not None:
                await worker.stop()
                worker = _app.state.worker = None
            await hearth.events.aclose()
            await hearth.joy.aclose()
            hearth.adds.close()
            await hearth.limiter.aclose()
            await hearth.db.dispose()
            scrape.worker_exited()  # its live series leave the scrape; its totals stay

    app = FastAPI(
        title="hearth",
        version=__version__,
        summary="A durable home for AI agents' identities and data.",
        openapi_url="/v1/openapi.json",
        docs_url="/v1/docs",
        redoc_url=None,
        lifespan=lifespan,
        # Before every route's own dependencies: text no database can store is refused once,
        # here, whichever route or field it was meant for (edge_guard.py, edge_text.py).
        dependencies=[Depends(edge_guard.refuse_unstorable)],
    )
    app.state.hearth = hearth
    error_handlers.install(app)
    openapi.install(app)
    for module in (public, health, orientation, arrival, keys, identities, bootstrap, adds):
        app.include_router(module.router)
    app.include_router(ipfs_gateway.router)
    for module in (wallets, vault):
        app.include_router(module.router)
    for module in (memory_routes, chronicle_routes):
        app.include_router(module.router)
    for module in (wake, voice, forks, templates, attestations, runtimes):
        app.include_router(module.router)
    for module in (strands, inbox, bridge, life):
        app.include_router(module.router)
    # A Starlette route, not a FastAPI one: the MCP endpoint is its own protocol (JSON-RPC), kept
    # out of the OpenAPI document, and authenticates its bearer itself.
    app.router.routes.append(Route(MCP_PATH, mcp_endpoint, methods=["GET", "POST", "DELETE"]))
    app.add_middleware(
        ServiceMiddleware,
        body_limit=_body_limits(settings),
        metrics=hearth.metrics,
        joy_index=hearth.joy.current,
        tutor=tutor_for,
        changes=ChangeFeed(hearth.db, hearth.events),
    )
    # The console (docs/console.md): pages for people, on the same services, under /console;
    # its headers' wrapper is the outermost, so that every answer there carries them.
    console.install(app)
    return app


def _body_limits(settings: Settings) -> Callable[[str, str], int]:
    """JSON bodies are small; an ADDS block upload may be one whole chunk. A block's limit is
    ``max_block_bytes`` exactly, larger or smaller than ``max_body_bytes`` (the route enforces
    the same number while it streams), so a refusal always names the block limit."""

    def limit(method: str, path: str) -> int:
        if method == "PUT" and path.startswith("/v1/adds/blocks/"):
            return settings.max_block_bytes
        if method == "POST" and path == "/v1/identities/import":
            return settings.max_import_bytes
        return settings.max_body_bytes

    return limit


def _worker(
    settings: Settings,
    db: Database,
    events: EventBus,
    hub: BridgeHub | None = None,
    metrics: Metrics | None = None,
) -> Worker:
    # Imported here: the orchestrator pulls in the LLM SDKs, which only a worker needs.
    from .orchestrator import Worker  # noqa: PLC0415

    return Worker(settings, db, events, hub=hub, metrics=metrics)


async def run_worker(settings: Settings) -> None:
    """An orchestrator worker on its own (``hearth worker``, docs/orchestrator.md) until SIGINT or
    SIGTERM; then it gives its leases up, so that other workers take its runtimes over at once.
    It does not migrate the database (``hearth serve`` does) and holds no bridge: bridged
    runtimes are run by the workers inside ``hearth serve``."""
    configure_logging(settings.log_format, settings.log_level)
    db = Database(settings.database_url)
    # The worker's changes (thoughts, runtime moves) bump their project's stamp too, so that no
    # server process answers a wake cached before them, with or without Redis.
    events = EventBus(
        settings.redis_url,
        queue_size=settings.voice_queue_size,
        timeout_s=settings.redis_timeout_ms / 1000,
        breaker_s=settings.redis_breaker_seconds,
        stamp=wake_stamps.stamper(db),
    )
    await events.start()
    running = _worker(settings, db, events)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, running.request_stop)
    task = running.start()
    try:
        await task
    finally:
        await running.stop()
        await events.aclose()
        await db.dispose()


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (each worker builds its own app from the environment)."""
    return create_app(Settings(), serving=True)


def _ensure_sqlite_dir(url: str) -> None:
    path = url.split("///", 1)[-1].split("?", 1)[0]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)


__all__ = ["app_from_env", "create_app", "run_worker"]
