"""``report --history``: the last nights read from a fake GitHub's run artifacts, drawn by plotly, rendered
by a real headless Chromium.

The fake serves the nightly's runs newest first, each run's ``record-<leg>``
artifacts, and each zip behind a redirect to another host (as GitHub's
storage is): the token must not follow it.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest

from pipeline.cli import main
from tests.support.chromium import run_chromium
from tests.support.fake_github import FakeGitHub

pytestmark = pytest.mark.integration

ARTIFACTS = Path(__file__).resolve().parents[2] / "tests-artifacts"


def _zip(record: dict[str, object]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("record.json", json.dumps(record))
        archive.writestr("ccache-stats.log", "# a.c\ndirect_cache_hit\n")
    return buf.getvalue()


def _record(leg: str, hits: int, misses: int, toolchain: str, wall: float) -> dict[str, object]:
    return {
        "leg": leg,
        "backend": "rocm" if leg.startswith("rocm") else "cpu",
        "os": "linux",
        "started": "2026-11-30T06:00:00Z",
        "status": "success",
        "wall_seconds": wall,
        "ccache": {"hits": hits, "misses": misses},
        "toolchain": {"identity": toolchain},
    }


def _seed(gh: FakeGitHub) -> None:
    # Oldest first. Night 13 is outside the last three; night 14's cpu artifact is expired (not
    # fetched); night 15's rocm one is not a zip: left out, said, and the night counts with cpu's.
    nights = [
        (
            13,
            "2026-11-26",
            {"rocm-linux-gfx110X": (1, 99, "rocm-7.0", 1900.0), "cpu": (0, 100, "gcc-12", 300.0)},
        ),
        (
            14,
            "2026-11-27",
            {"rocm-linux-gfx110X": (97, 3, "rocm-7.0", 280.0), "cpu": (99, 1, "gcc-12", 30.0)},
        ),
        (15, "2026-11-28", {"rocm-linux-gfx110X": None, "cpu": (98, 2, "gcc-12", 31.0)}),
        (
            16,
            "2026-11-29",
            {"rocm-linux-gfx110X": (4, 96, "rocm-7.1", 1850.0), "cpu": (99, 1, "gcc-12", 29.0)},
        ),
    ]
    for number, day, legs in nights:
        artifacts = {
            f"record-{leg}": (b"not a zip" if v is None else _zip(_record(leg, *v)))
            for leg, v in legs.items()
        }
        gh.add_workflow_run(
            number * 100,
            number=number,
            started=f"{day}T06:00:00Z",
            artifacts=artifacts,
            expired=("record-cpu",) if number == 14 else (),
        )


def test_history_draws_each_leg_night_by_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    page = tmp_path / "history.html"
    with FakeGitHub(repo="octo/llama", token="t0ken-history", max_per_page=2) as gh:
        _seed(gh)
        monkeypatch.setenv("GITHUB_TOKEN", "t0ken-history")
        code = main(
            [
                "report",
                "--history",
                "3",
                "--repo",
                "octo/llama",
                "--api-url",
                gh.api_url,
                "--html",
                str(page),
                "--hit-rate-warning",
                "0.5",
            ]
        )
        blob_auth = list(gh.blob_auth)
    out = capsys.readouterr().out
    assert code == 0, out
    # Five zips fetched (nights 14-16, the expired one not), none with the token.
    assert blob_auth == [None] * 5
    assert "left out: run 1500 artifact record-rocm-linux-gfx110X: not a readable zip" in out
    assert "rocm-linux-gfx110X: 2 nights, last 2026-11-29 #16: 4% hits, 30.8 min; 1 toolchain change" in out
    assert "cpu: 2 nights, last 2026-11-29 #16: 99% hits, 0.5 min; 0 toolchain changes" in out

    dom = run_chromium(
        tmp_path / "profile", "--dump-dom", "--virtual-time-budget=10000", page.as_uri()
    ).stdout
    sections = dict(re.findall(r'<section class="leg" data-leg="([^"]+)" data-nights="(\d+)"', dom))
    assert sections == {"cpu": "2", "rocm-linux-gfx110X": "2"}
    # plotly drew every figure: its SVG root inside each leg's div, and a marker per night per chart.
    for leg in sections:
        div = dom.split(f'id="history-{leg}"', 1)[1].split("</section>", 1)[0]
        assert 'class="main-svg"' in div, f"{leg}: no plotly figure drawn"
    cpu = dom.split('id="history-cpu"', 1)[1].split("</section>", 1)[0]
    rocm = dom.split('id="history-rocm-linux-gfx110X"', 1)[1].split("</section>", 1)[0]
    # cpu: 2 nights x (hit rate, build time); rocm: 2 x 2 and one star for the rocm-7.1 night.
    assert len(re.findall(r'<path class="point"', cpu)) == 4
    assert len(re.findall(r'<path class="point"', rocm)) == 5
    assert "toolchain changed" in rocm and "toolchain changed" not in cpu

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "history.png"
    shot.unlink(missing_ok=True)
    run_chromium(
        tmp_path / "profile-shot",
        f"--screenshot={shot}",
        "--window-size=1200,1300",
        "--virtual-time-budget=10000",
        page.as_uri(),
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_repository_without_records_has_no_history_yet_and_that_is_no_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A new repository's first nightly: its summary job must not fail for want of past nights.
    with FakeGitHub(repo="octo/llama", token="tk") as gh:
        gh.add_workflow_run(1, number=1, started="2026-11-29T06:00:00Z", artifacts={"bundle-cpu": b"x"})
        monkeypatch.setenv("GITHUB_TOKEN", "tk")
        code = main(
            [
                "report",
                "--history",
                "5",
                "--repo",
                "octo/llama",
                "--api-url",
                gh.api_url,
                "--html",
                str(tmp_path / "h.html"),
                "--hit-rate-warning",
                "0.5",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0
    assert "history: octo/llama: no finished run of nightly.yml left record artifacts: nothing to draw" in out
    assert not (tmp_path / "h.html").exists()


def test_a_malformed_runs_answer_is_an_error_not_an_empty_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeGitHub(repo="octo/llama", token="tk") as gh:
        gh.workflow_runs.append({"id": "junk", "status": "completed"})
        monkeypatch.setenv("GITHUB_TOKEN", "tk")
        code = main(
            [
                "report",
                "--history",
                "5",
                "--repo",
                "octo/llama",
                "--api-url",
                gh.api_url,
                "--html",
                str(tmp_path / "h.html"),
                "--hit-rate-warning",
                "0.5",
            ]
        )
    err = capsys.readouterr().err
    assert code != 0 and "malformed run: no integer 'id'" in err and "Traceback" not in err
