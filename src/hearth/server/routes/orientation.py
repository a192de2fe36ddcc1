"""The other pre-auth read routes the specification names (filled in by the orientation work)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["orientation"])
