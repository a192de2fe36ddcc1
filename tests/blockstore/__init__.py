"""Tests of hearth.blockstore."""
