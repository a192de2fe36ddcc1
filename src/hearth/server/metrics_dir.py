"""The metrics directory of a server run with several workers (prometheus-client's multiprocess
mode; what a scrape does with it is in scrape.py).

Standard library only: ``hearth serve`` calls this before anything imports prometheus_client,
which decides once, at import, whether its values live in files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def metrics_directory(workers: int) -> Iterator[str | None]:
    """For the run of a server with ``workers`` worker processes: several get a new private
    directory (mode 0700) in ``PROMETHEUS_MULTIPROC_DIR`` before they start, removed when the
    run ends; one gets no variable, so that its metrics stay in its plain registry.

    An inherited value is never used: another run's files would add its totals to this one's."""
    if workers <= 1:
        os.environ.pop(ENV, None)
        yield None
        return
    path = tempfile.mkdtemp(prefix="hearth-metrics-")
    os.environ[ENV] = path
    try:
        yield path
    finally:
        os.environ.pop(ENV, None)
        shutil.rmtree(path, ignore_errors=True)


__all__ = ["ENV", "metrics_directory"]
