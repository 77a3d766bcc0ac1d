"""Republishing a live release replaces its assets and never removes one first.

A live, latest release of every leg is republished with rebuilt bundles (the
workflow's forced run, ``PIPELINE_FORCE=true``) against the fake GitHub, with a
fault at each point: every upload, one upload, every rename, one rename, the
deletes, the notes update, and the run killed between two of its requests.
The fake records the release after every change it makes, so each test
checks every moment of the run, not only its end:

- each bundle name holds its old bytes or its new bytes, whole; at most one
  name is missing at a time (between its old copy stepping aside and its new
  copy taking the name);
- every line of the SHA256SUMS on the release names a file on the release with
  that file's sha256 (read from the bytes, not from the code under test).

After a failed run the release is exactly as it was, or wholly new; a rerun
completes it, notes included.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import release_runs
from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import ROOT
from tests.support.release_runs import FIVE_LEGS, REPO, SOURCE_ASSET, TAG, TOKEN, assert_release_complete

# Every request of a publish is counted below: the run has five legs, not the shipped matrix's.
MATRIX = release_runs.FIVE_LEGS_MATRIX


def make_run(out: Path, *, legs: tuple[str, ...] = FIVE_LEGS) -> dict[str, Path]:
    return release_runs.make_run(out, legs=legs, matrix=MATRIX)


def publish(gh: FakeGitHub, out: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return release_runs.publish(gh, out, *args, matrix=MATRIX, legs=FIVE_LEGS, **env)


def env_for(gh: FakeGitHub) -> dict[str, str]:
    return release_runs.env_for(gh, legs=FIVE_LEGS)


pytestmark = pytest.mark.integration

SUMS = "SHA256SUMS"


def _marked(name: str) -> bool:
    return ".pending-" in name or ".previous-" in name


def _bytes_of(bundles: dict[str, Path]) -> dict[str, bytes]:
    """The bundles' bytes and the run's source archive's (beside them on the release) by asset name."""
    out = next(iter(bundles.values())).parents[1]
    return {
        **{name: path.read_bytes() for name, path in bundles.items()},
        SOURCE_ASSET: (out / "source" / f"llama.cpp-{TAG}.tar.gz").read_bytes(),
    }


def state(gh: FakeGitHub) -> dict[str, Any]:
    """The release as a user sees it: kind, notes and every asset's bytes."""
    release = gh.snapshot()[TAG]
    return {k: release[k] for k in ("draft", "prerelease", "body", "assets", "starter")}


def check_every_moment(gh: FakeGitHub, old: dict[str, bytes], new: dict[str, bytes]) -> None:
    for what, snap in gh.history:
        release = snap.get(TAG)
        if release is None or release["draft"]:
            continue
        final = {n: b for n, b in release["assets"].items() if not _marked(n)}
        assert not [n for n in release["starter"] if not _marked(n)], what
        # A name the release had is missing only while its new copy takes it (SHA256SUMS aside).
        missing = set(old) - set(final) - {SUMS}
        assert len(missing) <= 1, (what, missing)
        for name, data in final.items():
            if name != SUMS:
                assert data in (old.get(name), new.get(name)), (what, name)
        if SUMS in final:
            for line in final[SUMS].decode().splitlines():
                digest, name = line.split("  ", 1)
                assert name in final, (what, f"{SUMS} names {name}, which is not on the release")
                assert hashlib.sha256(final[name]).hexdigest() == digest, (
                    what,
                    f"{SUMS}: wrong hash for {name}",
                )


def live_release(gh: FakeGitHub, tmp_path: Path) -> dict[str, bytes]:
    """Publish a full run: the live, latest release every test starts from; its bundles' bytes."""
    first = make_run(tmp_path / "first")
    proc = publish(gh, tmp_path / "first", "--apply")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert gh.latest_tag() == TAG
    return _bytes_of(first)


def rebuilt(tmp_path: Path) -> dict[str, Path]:
    """The forced rebuild's run: other bytes for every bundle, other wall times in the notes."""
    bundles = make_run(tmp_path / "forced")
    for path in (tmp_path / "forced").glob("*/record.json"):
        path.write_text(path.read_text().replace('"wall_seconds": 10', '"wall_seconds": 20'))
    return bundles


def assert_new(gh: FakeGitHub, bundles: dict[str, Path], tmp_path: Path, name: str) -> None:
    (tmp_path / name).mkdir()
    assert_release_complete(gh, bundles, tmp_path / name)
    now = state(gh)
    assert not [n for n in now["assets"] if _marked(n)] and now["starter"] == []
    assert "| 3m 21s |" in now["body"]  # the rebuild's notes
    assert gh.latest_tag() == TAG and now["prerelease"] is False


FAULTS = {
    # (method, pattern, times, after)
    "every upload": ("POST", r"/assets\?name=", 100, 0),
    "the fourth upload": ("POST", r"/assets\?name=", 5, 3),
    "every rename": ("PATCH", r"/releases/assets/\d+$", 100, 0),
    "the sixth rename": ("PATCH", r"/releases/assets/\d+$", 5, 5),
    "the notes": ("PATCH", r"/releases/\d+$", 100, 0),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_failed_forced_republish_leaves_the_release_as_it_was_and_a_rerun_completes_it(
    fault: str, tmp_path: Path
) -> None:
    method, pattern, times, after = FAULTS[fault]
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        old = live_release(gh, tmp_path)
        before = state(gh)
        bundles = rebuilt(tmp_path)
        gh.fault(method, pattern, 502, times=times, after=after)
        failed = publish(gh, tmp_path / "forced", "--apply", PIPELINE_FORCE="true")
        assert failed.returncode != 0, failed.stdout
        # One error line (the retries say what they wait for before it), no traceback.
        assert "Traceback" not in failed.stderr, failed.stderr
        assert len([line for line in failed.stderr.splitlines() if line.startswith("error:")]) == 1, (
            failed.stderr
        )
        check_every_moment(gh, old, _bytes_of(bundles))
        assert state(gh) == before  # as it was: old bytes, old notes, nothing staged left behind

        gh.faults.clear()
        rerun = publish(gh, tmp_path / "forced", "--apply", PIPELINE_FORCE="true")
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        check_every_moment(gh, old, _bytes_of(bundles))
        assert_new(gh, bundles, tmp_path, "check")


def test_failed_deletes_of_the_old_copies_leave_the_release_new_and_a_rerun_removes_them(
    tmp_path: Path,
) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        old = live_release(gh, tmp_path)
        bundles = rebuilt(tmp_path)
        gh.fault("DELETE", r"/releases/assets/\d+$", 502, times=100)
        failed = publish(gh, tmp_path / "forced", "--apply", PIPELINE_FORCE="true")
        assert failed.returncode != 0 and "DELETE" in failed.stderr, failed.stdout + failed.stderr
        check_every_moment(gh, old, _bytes_of(bundles))
        # Wholly new (bytes, SHA256SUMS, notes); only the previous copies are still beside them
        # (each bundle's, the old SHA256SUMS and the interim one).
        now = state(gh)
        assert {n: b for n, b in now["assets"].items() if not _marked(n)} == {
            **_bytes_of(bundles),
            SUMS: (tmp_path / "forced" / "release" / SUMS).read_bytes(),
        }
        assert sorted(n.split(".previous-")[0] for n in now["assets"] if _marked(n)) == sorted(
            [*bundles, SUMS, SUMS]
        )
        gh.faults.clear()
        rerun = publish(gh, tmp_path / "forced", "--apply", PIPELINE_FORCE="true")
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert "remove" in rerun.stdout and "(set aside by an interrupted replacement)" in rerun.stdout
        assert_new(gh, bundles, tmp_path, "check")


# Requests a forced republish of 5 bundles makes that change the release, in order: 6 staged
# uploads (5 bundles, SHA256SUMS) and the interim SHA256SUMS (7), 14 renames (the old SHA256SUMS
# aside, the interim in, then each bundle aside and in, the interim aside, the new one in: 21),
# the notes (22), then 7 deletes of the previous copies (29).
KILL_AFTER = (3, 8, 9, 14, 21, 22, 25)


@pytest.mark.parametrize("kill_after", KILL_AFTER)
def test_a_forced_republish_killed_between_two_steps_is_completed_by_a_rerun(
    kill_after: int, tmp_path: Path
) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        old = live_release(gh, tmp_path)
        bundles = rebuilt(tmp_path)
        start = len(gh.history)
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline", "--matrix", str(MATRIX), "publish", "--repo", REPO,
             "--api-url", gh.api_url, "--out", str(tmp_path / "forced"), "--apply"],
            env={**os.environ, "PYTHONPATH": str(ROOT), **env_for(gh), "PIPELINE_FORCE": "true"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

        def kill(_seen: object) -> None:
            if len(gh.history) - start == kill_after:
                os.kill(proc.pid, signal.SIGKILL)  # the change is made; its answer never arrives

        gh.on_change = kill
        proc.communicate(timeout=120)
        gh.on_change = None
        assert proc.returncode == -signal.SIGKILL
        assert len(gh.history) - start == kill_after
        check_every_moment(gh, old, _bytes_of(bundles))

        rerun = publish(gh, tmp_path / "forced", "--apply", PIPELINE_FORCE="true")
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        check_every_moment(gh, old, _bytes_of(bundles))
        assert_new(gh, bundles, tmp_path, "check")


def test_an_uninterrupted_forced_republish_makes_the_changes_counted_above(tmp_path: Path) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        old = live_release(gh, tmp_path)
        bundles = rebuilt(tmp_path)
        start = len(gh.history)
        proc = publish(gh, tmp_path / "forced", "--apply", PIPELINE_FORCE="true")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        kinds = [what.split()[0] + (" upload" if "/assets" in what and what.startswith("POST") else "")
                 for what, _ in gh.history[start:]]  # fmt: skip
        assert kinds == ["POST upload"] * 7 + ["PATCH"] * 15 + ["DELETE"] * 7
        check_every_moment(gh, old, _bytes_of(bundles))
        assert_new(gh, bundles, tmp_path, "check")


def test_completing_a_partial_release_whose_sums_upload_fails_keeps_its_sums(tmp_path: Path) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        partial = make_run(tmp_path / "manual", legs=("cpu",))
        first = publish(gh, tmp_path / "manual", "--apply", "--partial", PIPELINE_LEGS="cpu")
        assert first.returncode == 0, first.stdout + first.stderr
        before = state(gh)
        assert before["prerelease"] is True and sorted(before["assets"]) == sorted(
            [*partial, SOURCE_ASSET, SUMS]
        )
        bundles = make_run(tmp_path / "nightly")
        gh.fault("POST", rf"/assets\?name={SUMS}", 502, times=100)
        failed = publish(gh, tmp_path / "nightly", "--apply")
        assert failed.returncode != 0
        check_every_moment(gh, _bytes_of(partial), _bytes_of(bundles))
        assert state(gh) == before
        gh.faults.clear()
        full = publish(gh, tmp_path / "nightly", "--apply")
        assert full.returncode == 0, full.stdout + full.stderr
        check_every_moment(gh, _bytes_of(partial), _bytes_of(bundles))
        assert_release_complete(gh, bundles, tmp_path)
        assert state(gh)["prerelease"] is False and gh.latest_tag() == TAG


def test_notes_still_owed_are_written_by_a_rerun_that_uploads_nothing(tmp_path: Path) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        live_release(gh, tmp_path)
        notes = gh.release(TAG)["body"]  # type: ignore[index]
        gh.release(TAG)["body"] = "the notes of an earlier build"  # type: ignore[index]
        rerun = publish(gh, tmp_path / "first", "--apply")
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert "updated the notes of b7000" in rerun.stdout and "0 uploaded, 7 kept" in rerun.stdout
        assert gh.release(TAG)["body"] == notes  # type: ignore[index]
        assert (
            gh.uploads_done == 7
        )  # the first run's uploads only (five bundles, the source archive, SHA256SUMS)


def test_a_server_without_digests_has_each_upload_read_back(tmp_path: Path) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN, digests=False) as gh:
        old = live_release(gh, tmp_path)
        bundles = rebuilt(tmp_path)
        reads = gh.hits("GET")
        proc = publish(gh, tmp_path / "forced", "--apply", PIPELINE_FORCE="true")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        read_back = [r for r in gh.requests if r.method == "GET" and "/releases/assets/" in r.path]
        assert len(read_back) >= 7 and gh.hits("GET") > reads
        check_every_moment(gh, old, _bytes_of(bundles))
        assert_new(gh, bundles, tmp_path, "check")
