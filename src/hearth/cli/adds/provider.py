"""``hearth adds provider-record`` and ``receipt``: a provider's documents, signed for a local store
or fetched from (asked of) a node, and checked either way."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import typer

from hearth.adds import (
    AddsError,
    Commitment,
    Endpoint,
    InventoryItem,
    Role,
    build_provider_record,
    build_receipt,
    cid_for_bytes,
    receipt_covers,
    validate,
)
from hearth.blockstore import BlockStore, BlockStoreError

from .files import check_writable, emit
from .inputs import current_time, ed25519_key, expiry_time, is_cid, is_url
from .node import ask, bearer_for
from .options import BEARER_OPTION, DEFAULT_EXPIRY, FORCE_OPTION, NOW_OPTION, out_option
from .report import fail, note, problems_text, usage
from .stores import open_store, store_failure

__all__ = ["provider_record_command", "receipt_command"]


def _endpoint(text: str) -> Endpoint:
    """``TEMPLATE`` or ``TEMPLATE,PRIORITY``; the transport is the template's URI scheme."""
    template, priority = text, None
    head, comma, tail = text.rpartition(",")
    if comma and tail.strip().isdigit():
        template, priority = head, int(tail)
    scheme, separator, _ = template.partition("://")
    if not separator or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        usage(f"--endpoint {text!r}: a URI template with a scheme, e.g. https://host/b/{{cid}}")
    return Endpoint(transport=scheme.lower(), uri_template=template, priority=priority)


def _held_item(store: BlockStore, cid: str) -> InventoryItem:
    """What a local store holds under ``cid``: its size, and its role (the kind of an ADDS
    document, else a block). Reading it verifies it."""
    data = store.get(cid)
    role = Role.BLOCK
    if data[:1] == b"{":
        result = validate(data)
        if result.valid and result.kind is not None:
            role = Role(result.kind)
    return InventoryItem(cid, len(data), role)


def _local_store(location: str) -> BlockStore:
    if is_url(location):
        usage("--blocks is the local store these documents describe: a directory, not a URL")
    return open_store(location, None, create=False)


def _check_signed(document: bytes, kind: str, source: str) -> dict[str, Any]:
    """The parsed document a node sent, when it is a valid, correctly signed ``kind``."""
    result = validate(document)
    if not result.valid or not isinstance(result.document, dict):
        fail(f"{source} sent an invalid {kind}: {problems_text(result.errors)}")
    if result.kind != kind:
        fail(f"{source} sent a {result.kind}, not a {kind}")
    return result.document


def provider_record_command(
    *,
    key: Path | None = typer.Option(
        None, "--key", "-k", help="The provider's Ed25519 private key (PEM).", show_default=False
    ),
    provider_id: str | None = typer.Option(None, "--provider-id", show_default=False),
    record_id: str | None = typer.Option(None, "--record-id", show_default=False),
    sequence: int | None = typer.Option(
        None, "--sequence", min=0, help="Higher than any earlier record's.", show_default=False
    ),
    endpoint: list[str] | None = typer.Option(
        None,
        "--endpoint",
        help="TEMPLATE[,PRIORITY], e.g. 'https://p.example/v1/adds/blocks/{cid},10'; repeat.",
        show_default=False,
    ),
    blocks: str | None = typer.Option(
        None,
        "--blocks",
        help="The local store whose blocks the inventory lists (each read and verified).",
        show_default=False,
    ),
    expires_in: str = typer.Option(DEFAULT_EXPIRY, "--expires-in", help="The record's lifetime."),
    supersedes: str | None = typer.Option(
        None, "--supersedes", help="The CID of the record this one replaces.", show_default=False
    ),
    now: int | None = NOW_OPTION,
    from_url: str | None = typer.Option(
        None,
        "--from",
        help="Instead: fetch and check the current provider record of this node (public).",
        show_default=False,
    ),
    out: Path | None = out_option("record"),
    force: bool = FORCE_OPTION,
) -> None:
    """Sign a provider record listing every block of a local store, or fetch a node's (--from).

    For operators running their own node. The record is validated before it is written; its
    CID is printed on stderr.
    """
    building = {
        "--key": key,
        "--provider-id": provider_id,
        "--record-id": record_id,
        "--sequence": sequence,
        "--endpoint": endpoint or None,
        "--blocks": blocks,
    }
    if out is not None and str(out) != "-":
        check_writable(out, force)
    if from_url is not None:
        given = [name for name, value in building.items() if value is not None]
        if given or supersedes is not None:
            extra = ", ".join(given) or "--supersedes"
            usage(f"--from fetches a record; it does not take {extra}")
        data = ask(from_url, None, lambda node: node.provider_record())
        _check_signed(data, "provider_record", from_url)
        emit(data, out, force=force)
        note(f"provider_record_cid: {cid_for_bytes(data)}")
        return
    missing = [name for name, value in building.items() if value is None]
    if missing:
        usage(f"missing {', '.join(missing)} (or --from URL to fetch a node's record)")
    assert key is not None
    assert provider_id is not None
    assert record_id is not None
    assert sequence is not None
    assert endpoint
    assert blocks is not None
    if supersedes is not None and not is_cid(supersedes):
        usage(f"--supersedes {supersedes!r} is not an ADDS CID")
    endpoints = [_endpoint(text) for text in endpoint]
    moment = current_time(now)
    expires_at = expiry_time(moment, expires_in, None)
    signing = ed25519_key(key)
    store = _local_store(blocks)
    try:
        inventory = [_held_item(store, cid) for cid in store.cids()]
    except BlockStoreError as exc:
        store_failure(exc)
    finally:
        store.close()
    if not inventory:
        fail(f"{blocks} holds no block: a provider record lists at least one item")
    try:
        record = build_provider_record(
            key=signing,
            provider_id=provider_id,
            record_id=record_id,
            sequence=sequence,
            issued_at=moment,
            expires_at=expires_at,
            inventory=inventory,
            endpoints=endpoints,
            supersedes=supersedes,
        )
    except AddsError as exc:
        fail(f"the record would not be valid: {problems_text(exc.problems)}")
    emit(record.canonical, out, force=force)
    note(f"provider_record_cid: {record.cid} ({len(inventory)} items)")


def receipt_command(
    *,
    items: list[str] = typer.Option(
        ..., "--items", "--item", help="CIDs the receipt covers; repeat, or comma-separate."
    ),
    commitment: str = typer.Option(..., "--commitment", help="store or store_and_serve."),
    request: str | None = typer.Option(
        None,
        "--request",
        help="Ask this provider node for the receipt (POST /v1/adds/receipts).",
        show_default=False,
    ),
    bearer_file: Path | None = BEARER_OPTION,
    key: Path | None = typer.Option(
        None, "--key", "-k", help="The provider's Ed25519 private key (PEM).", show_default=False
    ),
    provider_id: str | None = typer.Option(None, "--provider-id", show_default=False),
    blocks: str | None = typer.Option(
        None,
        "--blocks",
        help="The local store holding the items (each read and verified).",
        show_default=False,
    ),
    retention_days: int | None = typer.Option(
        None, "--retention-days", min=1, help="How long the items are kept.", show_default=False
    ),
    provider_record: str | None = typer.Option(
        None, "--provider-record", help="The CID of the provider's record.", show_default=False
    ),
    receipt_id: str | None = typer.Option(
        None, "--receipt-id", help="Default: a random UUID.", show_default=False
    ),
    now: int | None = NOW_OPTION,
    out: Path | None = out_option("receipt"),
    force: bool = FORCE_OPTION,
) -> None:
    """Sign a storage receipt for items of a local store, or ask a node for one (--request).

    Either way the receipt is validated, and must cover every item asked for, before it is
    written. Its CID is printed on stderr.
    """
    cids = list(dict.fromkeys(c.strip() for text in items for c in text.split(",") if c.strip()))
    bad = [cid for cid in cids if not is_cid(cid)]
    if bad or not cids:
        usage(f"--items takes ADDS CIDs: {', '.join(bad) or '(none given)'}")
    if commitment not in {str(c) for c in Commitment}:
        usage("--commitment is store or store_and_serve")
    if out is not None and str(out) != "-":
        check_writable(out, force)
    local = {
        "--key": key,
        "--provider-id": provider_id,
        "--blocks": blocks,
        "--retention-days": retention_days,
    }
    if request is not None:
        given = [name for name, value in local.items() if value is not None]
        if provider_record is not None:
            given.append("--provider-record")
        if given:
            usage(f"--request asks the node, which sets {', '.join(given)} itself")
        data = ask(request, bearer_for(request, bearer_file), lambda n: n.receipt(cids, commitment))
        covered = receipt_covers(_check_signed(data, "receipt", request), cids)
        if set(covered) != set(cids):
            fail(f"{request} sent a receipt that does not cover every item asked for")
        emit(data, out, force=force)
        note(f"receipt_cid: {cid_for_bytes(data)}")
        return
    missing = [name for name, value in local.items() if value is None]
    if missing:
        usage(f"missing {', '.join(missing)} (or --request URL to ask a node)")
    assert key is not None
    assert provider_id is not None
    assert blocks is not None
    assert retention_days is not None
    if provider_record is not None and not is_cid(provider_record):
        usage(f"--provider-record {provider_record!r} is not an ADDS CID")
    signing = ed25519_key(key)
    store = _local_store(blocks)
    try:
        held = [_held_item(store, cid) for cid in cids]
    except KeyError:  # BlockNotFound
        fail(f"{blocks} does not hold every item: a provider commits only to what it has")
    except BlockStoreError as exc:
        store_failure(exc)
    finally:
        store.close()
    moment = current_time(now)
    try:
        receipt = build_receipt(
            key=signing,
            provider_id=provider_id,
            receipt_id=receipt_id or str(uuid.uuid4()),
            issued_at=moment,
            retention_until=moment + retention_days * 86_400,
            commitment=Commitment(commitment),
            items=held,
            provider_record=provider_record,
        )
    except AddsError as exc:
        fail(f"the receipt would not be valid: {problems_text(exc.problems)}")
    emit(receipt.canonical, out, force=force)
    note(f"receipt_cid: {receipt.cid} ({len(held)} items)")
