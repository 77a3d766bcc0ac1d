"""pipeline.report.formats (rows, cache alarm, markdown, HTML, console) and the report command."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from pipeline.cli import main
from pipeline.report import formats as report
from pipeline.results.record import LegRecord

REPO = Path(__file__).resolve().parents[2]


def timings(device: float = 0.0, host: float = 0.0, link: float = 0.0) -> dict[str, Any]:
    return {
        "classes": {
            "device": {"count": 2, "seconds": device},
            "host": {"count": 3, "seconds": host},
            "link": {"count": 1, "seconds": link},
            "other": {"count": 0, "seconds": 0.0},
        },
        "timeline": [
            [0, int(host * 1000), "host", "a.c.o"],
            [0, int(device * 1000), "device", "k.cu.o"],
            [int(device * 1000), int((device + link) * 1000), "link", "bin/libk.so"],
        ],
        "timeline_truncated": False,
    }


def record(
    leg: str,
    *,
    hits: int = 90,
    misses: int = 10,
    identity: str = "gcc-12.2.0",
    previous_toolchain: Any = None,
    status: str = "success",
    with_timings: bool = True,
) -> LegRecord:
    cc: dict[str, Any] = {
        "hits": hits,
        "misses": misses,
        "uncacheable": 1,
        "hit_rate": 0.5,
        "version": "4.14.2",
    }
    if previous_toolchain is not None:
        cc["previous_toolchain"] = previous_toolchain
    return LegRecord(
        leg=leg,
        backend="cpu",
        os="linux",
        started="2026-08-09T06:00:00Z",
        wall_seconds=754.0,
        status=status,
        ccache=cc,
        toolchain={"kind": "gcc", "identity": identity, "compilers": {}, "details": {}},
        timings=timings(device=1200.0, host=300.0, link=20.0) if with_timings else None,
    )


# --------------------------------------------------------------------------
# Hit rate and toolchain change


def test_hit_rate_from_counts_wins_over_the_stored_rate() -> None:
    assert report.hit_rate_of({"hits": 3, "misses": 1, "hit_rate": 0.1}) == 0.75
    assert report.hit_rate_of({"hits": 0, "misses": 0}) is None
    assert report.hit_rate_of({"hit_rate": 0.4}) == 0.4
    assert report.hit_rate_of({"hit_rate": 40}) == 0.4
    assert report.hit_rate_of({}) is None


def test_toolchain_change_prefers_the_records_own_previous_toolchain() -> None:
    prev_same = record("cpu", identity="gcc-12.2.0")
    prev_other = record("cpu", identity="gcc-11.0.0")
    assert report.toolchain_changed(record("cpu", previous_toolchain="gcc-11.0.0"), prev_same) is True
    assert (
        report.toolchain_changed(record("cpu", previous_toolchain={"identity": "gcc-12.2.0"}), prev_other)
        is False
    )
    assert report.toolchain_changed(record("cpu"), prev_other) is True
    assert report.toolchain_changed(record("cpu"), prev_same) is False
    assert report.toolchain_changed(record("cpu"), None) is None


def test_alarm_fires_for_a_cold_cache_with_an_unchanged_toolchain() -> None:
    row = report.leg_row(record("rocm-x", hits=5, misses=95), record("rocm-x"), 0.9)
    assert row.hit_rate == pytest.approx(0.05)
    assert row.warning is not None
    assert row.warning.startswith("rocm-x: ccache hit rate 5% is under 90%")
    assert "gcc-12.2.0" in row.warning


@pytest.mark.parametrize(
    ("rec", "previous"),
    [
        # A new toolchain explains the cold cache.
        (
            record("l", hits=5, misses=95, identity="rocm-10.1.0a20260809"),
            record("l", identity="rocm-10.1.0a20260802"),
        ),
        # Nothing tells whether the toolchain changed.
        (record("l", hits=5, misses=95), None),
        # Nothing was compiled.
        (record("l", hits=0, misses=0), record("l")),
        # Above the threshold.
        (record("l", hits=95, misses=5), record("l")),
    ],
)
def test_no_alarm(rec: LegRecord, previous: LegRecord | None) -> None:
    assert report.leg_row(rec, previous, 0.9).warning is None


def test_rows_are_sorted_and_matched_to_their_previous_leg() -> None:
    records = [record("vulkan", hits=1, misses=99), record("cpu", hits=1, misses=99)]
    previous = {"cpu": record("cpu")}
    rows = report.leg_rows(records, previous, 0.9)
    assert [r.leg for r in rows] == ["cpu", "vulkan"]
    assert [r.toolchain_changed for r in rows] == [False, None]
    assert report.warnings_of(rows) == [rows[0].warning]


def test_device_share_and_class_seconds() -> None:
    row = report.leg_row(record("rocm"), None, 0.9)
    assert row.class_seconds["device"] == 1200.0
    assert row.device_share == pytest.approx(0.8)
    assert report.leg_row(record("cpu", with_timings=False), None, 0.9).device_share is None


# --------------------------------------------------------------------------
# Formatting


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "—"), (0.25, "0.2s"), (42.4, "42s"), (185, "3m 05s"), (3720, "1h 02m")],
)
def test_format_seconds(seconds: float | None, text: str) -> None:
    assert report.format_seconds(seconds) == text


def test_markdown_has_one_row_per_leg_and_lists_alarms() -> None:
    rows = report.leg_rows([record("a|b", hits=10, misses=90), record("cpu")], {"a|b": record("a|b")}, 0.9)
    md = report.render_markdown(rows, threshold=0.9)
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 2
    assert table[0].startswith("| Leg | Status | Hits | Misses | Hit rate |")
    assert "| a\\|b | success | 10 | 90 | **10.0%** ⚠️ |" in md
    assert (
        "| cpu | success | 90 | 10 | 90.0% | 12m 34s | gcc-12.2.0 | new cache | 20m 00s / 5m 00s (80% device) |"
        in md
    )
    assert "**Cache alarms** (hit rate under 90% with an unchanged toolchain):" in md
    assert "- a\\|b: ccache hit rate 10% is under 90%" in md


def test_a_first_build_says_new_cache_and_a_record_without_a_toolchain_says_nothing() -> None:
    unknown = record("cuda")
    unknown.toolchain = {}
    rows = report.leg_rows([record("cpu"), unknown, record("rocm", previous_toolchain="gcc-12.2.0")], {}, 0.9)
    md = report.render_markdown(rows, threshold=0.9)
    vs_cache = {
        line.split(" | ")[0][2:]: line.split(" | ")[7] for line in md.splitlines() if line.startswith("| ")
    }
    assert vs_cache == {"Leg": "Toolchain vs cache", "cpu": "new cache", "cuda": "—", "rocm": "same"}
    assert "?" not in md


def test_summed_step_times_are_labelled_as_summed_everywhere() -> None:
    rows = report.leg_rows([record("cpu")], {}, 0.9)
    md = report.render_markdown(rows, threshold=0.9)
    # 20m + 5m of steps in a 12m 34s build: the column says it adds up parallel jobs.
    assert "| Device / host (summed) |" in md
    assert "the compile steps' times added up over the parallel jobs, so they can exceed Wall" in md
    console = Console(record=True, width=300)
    report.print_report(console, rows)
    text = console.export_text()
    assert "Device / host (summed)" in text and "added up over the parallel jobs" in text
    page = html_page([record("cpu")])
    assert "<th>Device / host (summed)</th>" in page and "added up over the parallel jobs" in page


def test_html_shows_each_bundle_check_as_the_console_and_markdown_do() -> None:
    passed, failed = record("cpu"), record("cuda")
    passed.bundle_check = {
        "ok": True,
        "summary": "check-bundle passed: 7 files, smoke run 3/3",
        "problems": [],
    }
    failed.bundle_check = {
        "ok": False,
        "summary": "check-bundle failed",
        "problems": [{"file": "libx.so", "message": "needs libcuda.so.1", "kind": "needed"}],
    }
    rows = report.leg_rows([passed, failed], {}, 0.9)
    page = report.render_html([passed, failed], rows, generated="2026-08-09 07:00 UTC", threshold=0.9)
    md = report.render_markdown(rows, threshold=0.9)
    for line in (
        "cpu: check-bundle passed: 7 files, smoke run 3/3",
        "cuda: check-bundle failed: libx.so: needs libcuda.so.1",
    ):
        assert f"- {line}" in md
        assert f">{line}</li>" in page
    assert '<li class="failed">cuda: check-bundle failed' in page
    assert "Bundle checks" not in html_page([record("cpu")])


def test_markdown_without_alarms_has_no_alarm_section() -> None:
    md = report.render_markdown(report.leg_rows([record("cpu")], {}, 0.9), threshold=0.9)
    assert "Cache alarms" not in md


def test_console_table_shows_every_leg() -> None:
    console = Console(record=True, width=200)
    rows = report.leg_rows([record("cpu"), record("cuda", hits=1, misses=9)], {"cuda": record("cuda")}, 0.9)
    report.print_report(console, rows)
    text = console.export_text()
    assert "cpu" in text and "cuda" in text and "90.0%" in text and "10.0%" in text
    assert "warning: cuda: ccache hit rate 10%" in text


# --------------------------------------------------------------------------
# HTML


def html_page(records: list[LegRecord]) -> str:
    rows = report.leg_rows(records, {}, 0.9)
    return report.render_html(records, rows, generated="2026-08-09 07:00 UTC", threshold=0.9)


def page_data(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert m, "the page carries its data as JSON"
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def test_html_is_self_contained() -> None:
    page = html_page([record("cpu"), record("rocm")])
    assert page.startswith("<!DOCTYPE html>")
    # No external scripts, styles, images or fonts: the page opens offline.
    assert not re.search(r"\b(src|href)\s*=", page)
    assert "@import" not in page and "url(" not in page
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls


def test_html_embeds_each_legs_chart_data_with_lanes() -> None:
    data = page_data(html_page([record("rocm"), record("cpu", with_timings=False)]))
    legs = {leg["leg"]: leg for leg in data["legs"]}
    assert legs["rocm"]["hits"] == 90 and legs["rocm"]["misses"] == 10
    assert legs["rocm"]["classes"]["device"] == 1200.0
    # [start, end, class, output, lane]: the two overlapping compiles get two lanes.
    lanes = {t[3]: t[4] for t in legs["rocm"]["timeline"]}
    assert lanes["a.c.o"] != lanes["k.cu.o"]
    assert legs["cpu"]["timeline"] == [] and legs["cpu"]["classes"] is None


def test_html_escapes_hostile_names() -> None:
    rec = record("cpu")
    assert rec.timings is not None
    rec.timings["timeline"].append([0, 5, "other", "</script><script>alert(1)</script>{{rows}}"])
    rec.toolchain["identity"] = "<b>gcc</b>"
    page = html_page([rec])
    assert "<script>alert(1)" not in page
    assert "<b>gcc</b>" not in page and "&lt;b&gt;gcc&lt;/b&gt;" in page
    outputs = [t[3] for t in page_data(page)["legs"][0]["timeline"]]
    assert "</script><script>alert(1)</script>{{rows}}" in outputs


# --------------------------------------------------------------------------
# The report command


def write_record(folder: Path, rec: LegRecord) -> Path:
    path = folder / rec.leg / "record.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    rec.write(path)
    return path


@pytest.fixture
def no_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.mark.usefixtures("no_actions")
def test_report_command_reads_out_and_writes_html_and_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    write_record(out, record("cpu"))
    write_record(out, record("vulkan", hits=2, misses=98))
    prev = tmp_path / "prev"
    write_record(prev, record("vulkan"))
    code = main(["--matrix", str(REPO / "matrix.toml"), "report", "--out", str(out), "--previous", str(prev)])
    assert code == 0
    stdout = capsys.readouterr().out
    assert "warning: vulkan: ccache hit rate 2% is under 90%" in stdout
    md = (out / "report.md").read_text()
    assert "| cpu |" in md and "| vulkan |" in md
    assert page_data((out / "report.html").read_text())["legs"][1]["leg"] == "vulkan"


@pytest.mark.usefixtures("no_actions")
def test_report_command_with_explicit_records_and_paths(tmp_path: Path) -> None:
    a = write_record(tmp_path / "run", record("cpu"))
    b = write_record(tmp_path / "run", record("cuda"))
    html_path, md_path = tmp_path / "r.html", tmp_path / "r.md"
    args = ["report", str(a), str(b.parent), "--hit-rate-warning", "0.5", "--html", str(html_path)]
    assert main([*args, "--markdown", str(md_path), "--out", str(tmp_path / "unused")]) == 0
    assert [leg["leg"] for leg in page_data(html_path.read_text())["legs"]] == ["cpu", "cuda"]
    assert md_path.read_text().count("| gcc-12.2.0 |") == 2


def test_report_command_on_actions_appends_summary_and_annotates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = tmp_path / "out"
    write_record(out, record("rocm", hits=10, misses=90, previous_toolchain="gcc-12.2.0"))
    assert main(["report", "--out", str(out), "--hit-rate-warning", "0.9"]) == 0
    text = summary.read_text()
    assert text.startswith("earlier step\n## Build report")
    stdout = capsys.readouterr().out
    assert "::warning title=nightly report::rocm: ccache hit rate 10%25 is under 90%25" in stdout


@pytest.mark.usefixtures("no_actions")
def test_report_command_without_records_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--out", str(tmp_path), "--hit-rate-warning", "0.9"]) == 2
    assert "no records found" in capsys.readouterr().err


@pytest.mark.usefixtures("no_actions")
def test_report_command_rejects_a_bad_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_record(tmp_path, record("cpu"))
    assert main(["report", "--out", str(tmp_path), "--hit-rate-warning", "90"]) == 2
    assert "expected a rate between 0 and 1" in capsys.readouterr().err


def test_the_shader_cache_counts_stand_beside_ccaches_for_a_vulkan_leg_only() -> None:
    vulkan = record("vulkan")
    vulkan.ccache["glslc"] = {"hits": 1510, "misses": 2, "uncacheable": 7}
    broken = record("vulkan-broken")
    broken.ccache["glslc"] = {"hits": -1, "misses": 3}
    rows = report.leg_rows([vulkan, record("cpu"), broken], {}, 0.9)
    md = report.render_markdown(rows, threshold=0.9)
    cells = {
        line.split(" | ")[0][2:]: line.rstrip(" |").split(" | ")[-1]
        for line in md.splitlines()
        if line.startswith("| ")
    }
    assert cells == {
        "Leg": "Shaders hits / misses",
        "cpu": "—",
        "vulkan": "1510 / 2",
        "vulkan-broken": "— / 3",
    }
    # Markdown's separator row has one cell per column.
    assert (
        next(line for line in md.splitlines() if line.startswith("|---")).count("|")
        == len(report.HEADERS) + 1
    )
    page = report.render_html(
        [vulkan, record("cpu"), broken], rows, generated="2026-08-09 07:00 UTC", threshold=0.9
    )
    assert "<td>1510 / 2</td>" in page and "<th>Shaders hits / misses</th>" in page
