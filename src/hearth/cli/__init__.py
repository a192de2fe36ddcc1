"""The ``hearth`` command."""
