"""`rocm-alert` against the fake GitHub: one issue naming each stale ROCm family once, closed when none is.

The records are what a ROCm leg writes when its build is stale (pipeline/leg/steps.py: toolchain.stale and
toolchain.details.family); the issue is opened, commented on and closed over real HTTP.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.results.record import LegRecord
from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

REPO = "octo/llama"
TOKEN = "ghs_rocm_alert_secret_0123456789"
LABEL = "rocm-stale"


def _line(os_name: str, family: str) -> str:
    return (
        f"ROCm {os_name} {family}: the build weekly-stable takes (10.1.0a20260822) is 106 days old (over "
        "rocm.max_age_days = 14)"
    )


def records(out: Path, stale: dict[str, tuple[str, str] | None]) -> Path:
    """One success record per leg; ``(os, family)`` for a leg whose build was stale, None for a fresh one."""
    for leg, which in stale.items():
        os_name, family = which or ("linux", "gfx1151")
        toolchain = {"identity": "rocm-10.1.0a20260822", "details": {"family": family}}
        if which is not None:
            toolchain["stale"] = _line(os_name, family)
        (out / leg).mkdir(parents=True, exist_ok=True)
        LegRecord(
            leg=leg,
            backend="rocm",
            os=os_name,
            started="2026-12-06T09:17:00Z",
            toolchain=toolchain,
            bundle=None,
        ).write(out / leg / "record.json")
    return out


def alert(gh: FakeGitHub, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    proc = run_pipeline(["--matrix", str(ROOT / "matrix.toml"), "rocm-alert", "--repo", REPO, "--api-url", gh.api_url,
                         "--out", str(out), *extra],
                        env={"GITHUB_TOKEN": TOKEN, "GH_TOKEN": "", "PIPELINE_HTTP_BACKOFF": "0"})  # fmt: skip
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return proc


def issues(gh: FakeGitHub) -> list[dict]:
    return [i for i in gh.issues if LABEL in {lb["name"] for lb in i["labels"]}]


def test_each_stale_family_is_named_once_and_a_fresh_night_closes_the_issue(tmp_path: Path) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        # gfx90a on both OSes: two families; two legs of one would still be one line.
        out = records(
            tmp_path / "night1",
            {
                "rocm-linux-gfx90a": ("linux", "gfx90a"),
                "rocm-windows-gfx90a": ("windows", "gfx90a"),
                "rocm-linux-gfx1151": None,
            },
        )
        dry = alert(gh, out)
        assert "stale ROCm families: linux gfx90a, windows gfx90a" in dry.stdout
        assert "dry run: would open issue 'ROCm toolchain stale'" in dry.stdout and gh.issues == []
        alert(gh, out, "--apply")
        [issue] = issues(gh)
        assert issue["state"] == "open" and issue["title"] == "ROCm toolchain stale"
        assert f"- `linux gfx90a`: {_line('linux', 'gfx90a')}" in issue["body"]
        assert f"- `windows gfx90a`: {_line('windows', 'gfx90a')}" in issue["body"]

        # The same night again (a re-run): nothing new to say, nothing said.
        again = alert(gh, out, "--apply")
        assert "already named in #1" in again.stdout
        assert len(issues(gh)) == 1 and issue["comments"] == []

        # A night with one more stale family: one comment, naming it alone.
        out2 = records(
            tmp_path / "night2",
            {"rocm-linux-gfx90a": ("linux", "gfx90a"), "rocm-linux-gfx1151": ("linux", "gfx1151")},
        )
        alert(gh, out2, "--apply")
        assert len(issues(gh)) == 1 and len(issue["comments"]) == 1
        assert "`linux gfx1151`" in issue["comments"][0] and "gfx90a" not in issue["comments"][0]
        alert(gh, out2, "--apply")
        assert len(issue["comments"]) == 1

        # Every family fresh again: closed, saying so.
        fresh = records(tmp_path / "night3", {"rocm-linux-gfx90a": None})
        closed = alert(gh, fresh, "--apply")
        assert "stale ROCm families: none" in closed.stdout
        assert issue["state"] == "closed" and "again" in issue["comments"][-1]


def test_a_night_without_stale_families_and_no_issue_does_nothing(tmp_path: Path) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = alert(gh, records(tmp_path / "out", {"rocm-linux-gfx1151": None}), "--apply")
        assert "stale ROCm families: none" in proc.stdout and gh.issues == []
        assert gh.hits("POST") == 0


def test_the_record_a_stale_leg_writes_is_what_the_alert_reads(tmp_path: Path) -> None:
    """The keys: toolchain.stale (pipeline/leg/steps.py) and toolchain.details.family (the TheRock install's)."""
    from pipeline.release.plan import leg_result

    record = json.loads(
        records(tmp_path, {"r": ("linux", "gfx110X-all")}).joinpath("r", "record.json").read_text()
    )
    result = leg_result(record, where="r")
    assert (result.stale_family, result.stale) == ("linux gfx110X-all", _line("linux", "gfx110X-all"))
