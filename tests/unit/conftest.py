"""Unit tests are pure: no subprocesses, no network (integration tests do those)."""

from __future__ import annotations

import socket
import subprocess
from typing import Any

import pytest


def _forbidden(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"unit tests must not {what}: move this test to tests/integration/")

    return refuse


@pytest.fixture(autouse=True)
def _no_subprocess_or_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess.Popen, "__init__", _forbidden("start subprocesses"))
    monkeypatch.setattr(socket.socket, "connect", _forbidden("open network connections"))
