"""A service that cannot be reached is named, with the URL tried, in one line and exit 1:
no traceback, whichever command ran into it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.cli.client_config import Profile, save_api_key, save_profile
from tests.support.cli_homes import run
from tests.support.live import free_port


@pytest.mark.parametrize(
    "args", [["wallet", "list"], ["vault", "show", "x"], ["chronicle"], ["wake"]]
)
def test_a_refused_connection_names_the_url(tmp_path: Path, args: list[str]) -> None:
    base_url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    profile = Profile(base_url, "project", "identity", "did:svc:x", "Nobody")
    save_profile(tmp_path, profile)
    save_api_key(tmp_path, "hk_test_not_a_real_bearer")
    result = run(args, tmp_path)
    assert result.exit_code == 1, result.output
    assert f"cannot reach the service at {base_url}/v1/" in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert "hk_test_not_a_real_bearer" not in result.output
