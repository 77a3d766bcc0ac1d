"""When act's first night waits for the cpu leg's shared units (tests/support/shared_units.py): only on a cold
machine, only when the writer runs in the same xdist run, and only until the writer is done."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.workload.llama_sdist import CACHE_ENV
from tests.support import shared_units


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    return tmp_path / shared_units.FOLDER


def test_no_wait_outside_xdist_without_a_writer_or_once_filled(cache: Path) -> None:
    said: list[str] = []
    assert shared_units.wait_for_the_writer(None, True, say=said.append) == 0.0
    assert shared_units.wait_for_the_writer("run-1", False, say=said.append) == 0.0
    shared_units.writer_finished(None, filled=True)
    assert (cache / shared_units.FILLED).is_file()
    assert shared_units.wait_for_the_writer("run-1", True, say=said.append) == 0.0
    assert said == []


def test_a_failed_writer_releases_the_readers_of_its_run_only(cache: Path) -> None:
    shared_units.writer_finished("run-1", filled=False)
    assert not (cache / shared_units.FILLED).exists()
    said: list[str] = []
    # The writer of run-1 is done (its build failed): its readers go on at once, and the folder is not filled.
    assert shared_units.wait_for_the_writer("run-1", True, timeout=60, say=said.append) < 5
    assert said == ["shared units: waiting for the cpu leg's real-tree build to store them (a cold machine)"]
    # Another run's reader, with nothing filled and its writer not done, waits until its timeout.
    assert shared_units.wait_for_the_writer("run-2", True, timeout=0, say=said.append) >= 0
    assert not shared_units.writer_done_marker("run-2").exists()


def test_the_run_id_is_xdists() -> None:
    from types import SimpleNamespace

    assert shared_units.xdist_run(SimpleNamespace(workerinput={"testrunuid": "abc123"})) == "abc123"
    assert shared_units.xdist_run(object()) is None
