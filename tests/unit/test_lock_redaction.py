"""The lock's holder file and the busy error pass through the one redaction rule."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.errors import BusyError
from pipeline.processes.locks import hold, holder_file

SINCE = datetime(2026, 8, 10, 9, 17, tzinfo=UTC)
PASSWORD = "pa55w0rd"


def test_the_holder_file_and_the_busy_error_show_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        sys, "argv", ["pipeline", "build", "cpu", "--remote-cache", f"http://user:{PASSWORD}@host/c"]
    )
    lock = tmp_path / "out" / "cpu" / ".lock"
    with hold(lock, what="out/cpu", since=SINCE):
        stored = holder_file(lock).read_text()
        assert PASSWORD not in stored and "user" not in stored
        assert (
            json.loads(stored)["command"] == "python -m pipeline build cpu --remote-cache http://***@host/c"
        )
        with pytest.raises(BusyError) as busy, hold(lock, what="out/cpu", since=SINCE):
            pass  # pragma: no cover - the lock is taken
    assert PASSWORD not in busy.value.message
    assert (
        "(python -m pipeline build cpu --remote-cache http://***@host/c) since 2026-08-10T09:17:00+00:00"
        in busy.value.message
    )


def test_a_holder_file_written_with_a_password_is_shown_redacted(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    with hold(lock, what="out/cpu", since=SINCE):
        # As a run of an older version wrote it: the command line as typed.
        holder_file(lock).write_text(
            json.dumps(
                {"pid": 1, "since": "x", "command": f"build --remote-cache redis://:{PASSWORD}@h:6379"}
            )
        )
        with pytest.raises(BusyError) as busy, hold(lock, what="out/cpu", since=SINCE):
            pass  # pragma: no cover
    assert PASSWORD not in busy.value.message and "redis://***@h:6379" in busy.value.message
