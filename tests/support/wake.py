"""The wake's tests' material: rows of memories and runtimes as stored, an owner with a second
identity in its project, and the golden files of the renderers."""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hearth.server.db.tables import memories
from hearth.server.services import identities as identity_service
from tests.support.databases import in_db
from tests.support.live import Live
from tests.support.memories import Owner


def runtime_row(
    runtime_id: str,
    project_id: str,
    identity_id: str | None,
    name: str,
    created_at: datetime,
    *,
    deleted_at: datetime | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": runtime_id,
        "project_id": project_id,
        "identity_id": identity_id,
        "name": name,
        "mode": "self",
        "status": "running",
        "region": "lhr",
        "llm": {"provider": "local", "model": "llama"},
        "bridge": None,
        "metadata": metadata or {},
        "last_error": None,
        "control_token_hash": None,
        "key_material": None,
        "bridge_connected": False,
        "last_seen_at": created_at + timedelta(minutes=1),
        "last_thought_at": None,
        "last_work_at": None,
        "status_changed_at": created_at,
        "lease_owner": None,
        "lease_until": 0,
        "created_at": created_at,
        "updated_at": created_at,
        "deleted_at": deleted_at,
    }


VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "wake"


def check_golden(name: str, actual: bytes) -> None:
    """``actual`` must equal the golden file byte for byte (or, regenerating, becomes it)."""
    path = VECTORS / name
    if os.environ.get("HEARTH_REGENERATE_GOLDEN") == "1":
        previous = path.read_bytes() if path.exists() else None
        path.write_bytes(actual)
        if previous != actual:
            pytest.fail(f"{name} regenerated: review the difference, then run without the flag")
        return
    assert path.exists(), f"{name} is missing: run with HEARTH_REGENERATE_GOLDEN=1"
    expected = path.read_bytes()
    assert actual.decode("utf-8") == expected.decode("utf-8")
    assert actual == expected


def unflatten(text: str) -> Any:
    """Read the math form back: each line is ``path = <JSON value>``."""
    root: dict[str, Any] = {}
    step = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')
    for line in text.splitlines():
        path, _, value = line.partition(" = ")
        keys: list[str | int] = []
        for name, index, quoted in step.findall(path):
            keys.append(name or (int(index) if index else json.loads(quoted)))
        node: Any = root
        for here, after in itertools.pairwise(keys):
            empty: Any = [] if isinstance(after, int) else {}
            if isinstance(here, int):
                while len(node) <= here:
                    node.append(copy.deepcopy(empty))
                node = node[here]
            else:
                node = node.setdefault(here, empty)
        last = keys[-1]
        if isinstance(last, int):
            while len(node) <= last:
                node.append(None)
        node[last] = json.loads(value)
    return root


def owner_and_other(live: Live) -> tuple[Owner, str, str]:
    """A registered owner, its project, and a second identity of that project."""
    owner = Owner.new(live)
    project_id = owner.reg["project"]["id"]

    def second(conn: sa.Connection) -> str:
        new = identity_service.NewIdentity(project_id=project_id, name="Other", origin="test")
        return str(identity_service.create(conn, new).id)

    return owner, project_id, in_db(live, second)


def memory_row(
    project_id: str,
    identity_id: str | None,
    tier: str,
    content: str,
    created_at: datetime,
    *,
    patch: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A memory as stored; one with a patch was elevated when it was made."""
    return {
        "id": str(uuid.uuid4()),
        "project_id": project_id,
        "identity_id": identity_id,
        "tier": tier,
        "key": None,
        "content": content,
        "created_at": created_at,
        "elevated_at": created_at if patch is not None else None,
        "expression_patch": patch,
    }


def insert_memories(live: Live, rows: list[dict[str, Any]]) -> None:
    in_db(live, lambda conn: conn.execute(memories.insert(), rows))
