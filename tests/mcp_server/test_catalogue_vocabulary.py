"""The MCP catalogue's enums are the service's vocabularies, written out because the catalogue
may not import the server (pyproject.toml's import contracts): held here to the one definition
of each, so that a kind or tier added to the service cannot be missing from the tools."""

from __future__ import annotations

from typing import Any

from hearth.mcp.catalogue import TOOLS
from hearth.server.canon import WRITABLE_CHRONICLE_KINDS
from hearth.server.memory_tiers import TIERS


def _properties(tool: str) -> dict[str, Any]:
    spec = next(t for t in TOOLS if t.name == tool)
    properties: dict[str, Any] = spec.input_schema["properties"]
    return properties


def test_chronicle_write_offers_exactly_the_writable_kinds() -> None:
    assert _properties("chronicle_write")["kind"]["enum"] == list(WRITABLE_CHRONICLE_KINDS)


def test_every_tier_enum_is_of_the_services_tiers() -> None:
    tiered = [spec for spec in TOOLS if "tier" in spec.input_schema.get("properties", {})]
    assert len(tiered) >= 2
    for spec in tiered:
        assert set(spec.input_schema["properties"]["tier"]["enum"]) <= set(TIERS), spec.name
    # Searching filters on every tier; storing never makes a constitutive memory (elevation
    # alone does, with its attestation).
    assert _properties("memory_search")["tier"]["enum"] == list(TIERS)
    assert "constitutive" not in _properties("memory_store")["tier"]["enum"]
