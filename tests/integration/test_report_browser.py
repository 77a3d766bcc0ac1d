"""The HTML report rendered by a real headless Chromium: the charts are drawn offline.

The page is written by the ``report`` command from records whose timings come
from a real Ninja build, loaded from a file:// URL with networking disabled,
and checked in the DOM Chromium dumps after running the page's script. A
screenshot is kept in ``tests-artifacts/`` at the repository root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.results import ninjalog
from pipeline.results.record import LegRecord
from tests.support.chromium import run_chromium

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests-artifacts"
PY = sys.executable.replace("\\", "/")


def real_timings(tmp_path: Path) -> dict[str, object]:
    """Timings of a small real Ninja build with device, host and link steps."""
    build = tmp_path / "build"
    build.mkdir()
    (build / "build.ninja").write_text(
        f"rule cc\n  command = \"{PY}\" -c \"open('$out', 'w').write('x')\"\n"
        "build obj/a.c.o: cc\nbuild obj/b.cpp.o: cc\nbuild obj/k.cu.o: cc\n"
        "build bin/libk.so: cc obj/k.cu.o obj/a.c.o\nbuild bin/app: cc bin/libk.so obj/b.cpp.o\n"
    )
    ninja = shutil.which("ninja")
    assert ninja, "ninja is not on PATH"
    subprocess.run([ninja, "-C", str(build)], check=True, capture_output=True)
    timings = ninjalog.timings_for_build(build)
    assert timings is not None and "error" not in timings
    return timings


def write_records(out: Path, timings: dict[str, object]) -> None:
    for leg, hits, misses in (("rocm-linux-gfx110X", 10, 90), ("cpu", 95, 5)):
        record = LegRecord(
            leg=leg,
            backend="rocm" if leg.startswith("rocm") else "cpu",
            os="linux",
            started="2026-08-09T06:00:00Z",
            wall_seconds=321.0,
            ccache={"hits": hits, "misses": misses, "uncacheable": 2, "previous_toolchain": "tc-1"},
            toolchain={"kind": "test", "identity": "tc-1", "compilers": {}, "details": {}},
            timings=timings,
        )
        record.write(out / leg / "record.json")


def test_report_renders_charts_in_headless_chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    out = tmp_path / "out"
    write_records(out, real_timings(tmp_path))
    page = tmp_path / "report.html"
    assert main(["report", "--out", str(out), "--html", str(page), "--hit-rate-warning", "0.9"]) == 0
    url = page.as_uri()

    dom = run_chromium(tmp_path / "profile-dom", "--dump-dom", url).stdout
    # The script ran and counted its charts: per leg a hit-rate bar, a time split and a timeline.
    m = re.search(r'<body data-charts="(\d+)"', dom)
    assert m, f"no <body data-charts> in the dumped DOM: {dom[:500]}"
    assert int(m.group(1)) == 6
    assert len(re.findall(r'<section class="leg" data-leg="', dom)) == 2
    for kind in ("hit", "split", "timeline"):
        assert len(re.findall(rf'<svg [^>]*class="chart-{kind}"', dom)) == 2, kind
    # Five steps per leg on the timeline, each a coloured rectangle with its output as tooltip.
    assert len(re.findall(r'<rect [^>]*class="step step-(device|host|link|other)"', dom)) == 10
    assert dom.count("<title>obj/k.cu.o (device,") == 2
    assert 'class="seg seg-hits"' in dom and 'class="seg seg-misses"' in dom
    # The alarm for the cold ROCm leg with an unchanged toolchain is on the page.
    assert "rocm-linux-gfx110X: ccache hit rate 10% is under 90%" in dom

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    run_chromium(tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,1400", url)
    assert shot.is_file(), "chromium wrote no screenshot"
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    shutil.copyfile(page, ARTIFACTS / "report.html")
    assert os.path.getsize(ARTIFACTS / "report.html") > 0
