"""The one name for a JSON object: what legitimately stays a mapping (docs/architecture.md,
"Rows and JSON").

A response body, a document body, a JSON column's value (an identity's expression or metadata, a
runtime's llm) is a ``JsonObject``; a row of a table is a frozen dataclass of
``hearth.server.db.rows``. Signatures never say a bare ``dict[str, Any]``
(tests/server/test_typed_rows.py), so a mapping in a signature is JSON and never a hidden row.
"""

from __future__ import annotations

from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]
