"""pipeline.results.ninjalog on hand-written logs: versions, restarts, multi-output edges, analysis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.errors import BuildError
from pipeline.results import ninjalog
from pipeline.results.ninjalog import (
    Step,
    assign_lanes,
    classify,
    classify_edge,
    critical_path,
    parse_log,
    summarize,
)


def log(version: int, *lines: tuple[int, int, str, str]) -> str:
    """A .ninja_log text: (start_ms, end_ms, output, hash) per line."""
    body = "".join(f"{s}\t{e}\t{1700000000000000000 + s}\t{o}\t{h}\n" for s, e, o, h in lines)
    return f"# ninja log v{version}\n" + body


def step(name: str, start: int, end: int, kind: str = "host") -> Step:
    return Step(outputs=(name,), start_ms=start, end_ms=end, kind=kind)


# --------------------------------------------------------------------------
# Versions and header variations


@pytest.mark.parametrize("version", [5, 6, 7])
def test_versions_5_to_7_share_one_layout(version: int) -> None:
    text = log(version, (0, 120, "a.c.o", "1f"), (5, 300, "b.cu.o", "2e"), (300, 340, "lib/libx.so", "3d"))
    parsed = parse_log(text)
    assert parsed.version == version
    assert [(s.name, s.start_ms, s.end_ms, s.kind) for s in parsed.steps] == [
        ("a.c.o", 0, 120, "host"),
        ("b.cu.o", 5, 300, "device"),
        ("lib/libx.so", 300, 340, "link"),
    ]


def test_v5_decimal_hashes_are_read_like_hex_ones() -> None:
    # Ninja 1.10 wrote the v5 hash in decimal, later versions in hex: neither is interpreted.
    text = "# ninja log v5\n0\t10\t0\tx.o\t12345678901234567890\n"
    assert parse_log(text).steps[0].name == "x.o"


def test_header_with_crlf_line_endings_and_trailing_space() -> None:
    text = "# ninja log v6 \r\n0\t10\t0\tx.o\tab\r\n10\t30\t0\ty.o\tcd\r\n"
    parsed = parse_log(text)
    assert parsed.version == 6
    assert [s.name for s in parsed.steps] == ["x.o", "y.o"]


def test_header_only_log_has_no_steps() -> None:
    parsed = parse_log("# ninja log v7\n")
    assert parsed.steps == ()
    summary = summarize(parsed)
    assert summary["steps"] == 0
    assert summary["wall_seconds"] == 0.0
    assert summary["critical_path"]["steps"] == 0


@pytest.mark.parametrize("version", [4, 8])
def test_unsupported_version_is_a_build_error_naming_the_file(version: int) -> None:
    with pytest.raises(
        BuildError, match=rf"build/\.ninja_log: Ninja log version v{version} is not supported"
    ):
        parse_log(f"# ninja log v{version}\n0\t1\t0\tx.o\tab\n", source="build/.ninja_log")


def test_missing_header_is_a_build_error() -> None:
    with pytest.raises(BuildError, match="not a Ninja log"):
        parse_log("0\t10\t0\tx.o\tab\n")
    with pytest.raises(BuildError, match="not a Ninja log"):
        parse_log("")


def test_malformed_lines_are_skipped_and_counted() -> None:
    # The last line was cut when a build was killed mid-write.
    text = log(7, (0, 10, "x.o", "a")) + "garbage\n20\t30\t0\ty.o\n" + "10\t40"
    parsed = parse_log(text)
    assert [s.name for s in parsed.steps] == ["x.o"]
    assert parsed.skipped_lines == 3


# --------------------------------------------------------------------------
# Restarts: only the last build counts


def test_appended_build_restarts_end_times_and_only_it_counts() -> None:
    first = [(0, 5000, "a.o", "1"), (0, 9000, "b.cu.o", "2"), (9000, 9500, "bin/app", "3")]
    second = [(0, 400, "a.o", "4"), (400, 700, "bin/app", "5")]
    parsed = parse_log(log(7, *first, *second))
    assert [(s.name, s.start_ms, s.end_ms) for s in parsed.steps] == [("a.o", 0, 400), ("bin/app", 400, 700)]


def test_short_build_followed_by_long_one_is_split_on_repeated_output() -> None:
    # The second build's end times never go backwards, but it rebuilds a.o: a new build.
    first = [(0, 10, "a.o", "1")]
    second = [(0, 2000, "a.o", "2"), (0, 3000, "b.o", "3")]
    parsed = parse_log(log(5, *first, *second))
    assert [(s.name, s.end_ms) for s in parsed.steps] == [("a.o", 2000), ("b.o", 3000)]


def test_three_builds_keep_the_third() -> None:
    text = log(6, (0, 100, "a.o", "1"), (0, 50, "b.o", "2"), (0, 20, "c.o", "3"), (20, 25, "d.o", "4"))
    assert [s.name for s in parse_log(text).steps] == ["c.o", "d.o"]


def test_repeated_header_starts_a_new_build() -> None:
    text = log(7, (0, 100, "a.o", "1")) + log(7, (200, 300, "b.o", "2"))
    assert [s.name for s in parse_log(text).steps] == ["b.o"]


# --------------------------------------------------------------------------
# Multi-output edges


def test_multi_output_edge_is_counted_once() -> None:
    text = log(
        7,
        (0, 100, "x.o", "aa"),
        (0, 900, "bin/ggml.dll", "bb"),
        (0, 900, "ggml.lib", "bb"),
        (0, 900, "ggml.exp", "bb"),
    )
    parsed = parse_log(text)
    assert len(parsed.steps) == 2
    edge = parsed.steps[1]
    assert edge.outputs == ("bin/ggml.dll", "ggml.lib", "ggml.exp")
    assert edge.kind == "link"
    summary = summarize(parsed)
    assert summary["classes"]["link"] == {"count": 1, "seconds": 0.9}
    assert summary["busy_seconds"] == pytest.approx(1.0)
    assert summary["slowest"][0]["outputs"] == ["bin/ggml.dll", "ggml.lib", "ggml.exp"]


def test_two_edges_with_equal_times_but_different_hashes_stay_two() -> None:
    text = log(7, (0, 100, "a.o", "aa"), (0, 100, "b.o", "bb"))
    assert len(parse_log(text).steps) == 2


# --------------------------------------------------------------------------
# Classification


@pytest.mark.parametrize(
    ("output", "kind"),
    [
        ("ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/fattn.cu.o", "device"),
        ("ggml/src/ggml-hip/CMakeFiles/ggml-hip.dir/__/ggml-cuda/mmq.cu.o", "device"),
        ("ggml/src/ggml-hip/CMakeFiles/ggml-hip.dir/kernel.hip.o", "device"),
        ("ggml\\src\\ggml-hip\\CMakeFiles\\ggml-hip.dir\\__\\ggml-cuda\\mmq.cu.obj", "device"),
        ("x/kernel.HIP.OBJ", "device"),
        ("src/CMakeFiles/llama.dir/llama.cpp.o", "host"),
        ("ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o", "host"),
        ("src\\CMakeFiles\\llama.dir\\llama.cpp.obj", "host"),
        ("bin/libllama.so", "link"),
        ("bin/libggml-base.so.0.9.4", "link"),
        ("src/libllama.so.0", "link"),
        ("common/libcommon.a", "link"),
        ("bin/ggml.dll", "link"),
        ("src/llama.lib", "link"),
        ("bin/llama-cli.exe", "link"),
        ("bin/llama-server", "link"),
        ("build.ninja", "other"),
        ("ggml/src/ggml-vulkan/vulkan-shaders.hpp", "other"),
        ("CMakeFiles/gen", "other"),
        ("bin/shaders.spv", "other"),
    ],
)
def test_classify(output: str, kind: str) -> None:
    assert classify(output) == kind


def test_edge_class_prefers_the_object_over_side_files() -> None:
    assert classify_edge(["k.cu.o", "k.cu.o.d.json"]) == "device"
    assert classify_edge(["foo.lib", "bin/foo.dll"]) == "link"
    assert classify_edge(["gen.h", "gen.c"]) == "other"


# --------------------------------------------------------------------------
# Critical path and lanes


def test_critical_path_walks_back_along_the_wall_clock() -> None:
    steps = [
        step("gen.h", 0, 100, "other"),
        step("a.o", 100, 900),
        step("b.cu.o", 100, 2500, "device"),
        step("c.o", 950, 1400),
        step("lib.so", 2500, 2800, "link"),
        step("bin/app", 2800, 3000, "link"),
    ]
    chain = critical_path(steps)
    assert [s.name for s in chain] == ["gen.h", "b.cu.o", "lib.so", "bin/app"]


def test_critical_path_takes_the_latest_ending_predecessor_across_a_gap() -> None:
    # c.o started at 1000; a.o (end 400) and b.o (end 700) had both ended: b.o ended later.
    steps = [step("a.o", 0, 400), step("b.o", 0, 700), step("c.o", 1000, 1200)]
    assert [s.name for s in critical_path(steps)] == ["b.o", "c.o"]
    summary = summarize(
        parse_log(log(7, (0, 400, "a.o", "1"), (0, 700, "b.o", "2"), (1000, 1200, "c.o", "3")))
    )
    cp = summary["critical_path"]
    assert cp["seconds"] == pytest.approx(1.2)
    assert cp["busy_seconds"] == pytest.approx(0.9)
    assert cp["steps"] == 2


def test_critical_path_survives_zero_length_steps() -> None:
    steps = [step("a.o", 0, 0), step("b.o", 0, 0), step("c.o", 0, 5)]
    chain = critical_path(steps)
    assert chain[-1].name == "c.o"
    assert len(chain) == len({id(s) for s in chain})


def test_lanes_reuse_free_rows_and_never_overlap() -> None:
    steps = [step("a", 0, 10), step("b", 0, 5), step("c", 5, 8), step("d", 10, 12), step("e", 1, 3)]
    lanes = assign_lanes(steps)
    assert lanes == [1, 0, 0, 0, 2]
    for i, a in enumerate(steps):
        for j, b in enumerate(steps):
            if i < j and lanes[i] == lanes[j]:
                assert a.end_ms <= b.start_ms or b.end_ms <= a.start_ms


# --------------------------------------------------------------------------
# Summary and trace


def rocm_like_log() -> str:
    lines: list[tuple[int, int, str, str]] = []
    t = 0
    for i in range(4):
        lines.append((t, t + 300, f"ggml/src/CMakeFiles/ggml-base.dir/h{i}.c.o", f"h{i}"))
        t += 300
    for i in range(3):
        lines.append((t, t + 3000, f"ggml/src/ggml-hip/CMakeFiles/ggml-hip.dir/d{i}.cu.o", f"d{i}"))
        t += 3000
    lines.append((t, t + 500, "bin/libggml-hip.so", "l"))
    return log(7, *lines)


def test_summary_per_class_counts_and_seconds() -> None:
    summary = summarize(parse_log(rocm_like_log()), top=2)
    assert summary["classes"] == {
        "device": {"count": 3, "seconds": 9.0},
        "host": {"count": 4, "seconds": 1.2},
        "link": {"count": 1, "seconds": 0.5},
        "other": {"count": 0, "seconds": 0.0},
    }
    assert summary["steps"] == 8
    assert summary["wall_seconds"] == pytest.approx(10.7)
    assert summary["parallelism"] == 1.0
    assert [s["class"] for s in summary["slowest"]] == ["device", "device"]
    assert summary["critical_path"]["classes"]["device"] == pytest.approx(9.0)
    assert summary["timeline"][0] == [0, 300, "host", "ggml/src/CMakeFiles/ggml-base.dir/h0.c.o"]
    assert summary["timeline_truncated"] is False
    json.dumps(summary)  # the record stores it as JSON


def test_timeline_keeps_the_longest_steps_when_truncated() -> None:
    summary = summarize(parse_log(rocm_like_log()), timeline_limit=3)
    assert summary["timeline_truncated"] is True
    assert [t[2] for t in summary["timeline"]] == ["device"] * 3
    assert [t[0] for t in summary["timeline"]] == sorted(t[0] for t in summary["timeline"])


def test_chrome_trace_has_one_complete_event_per_step_in_microseconds() -> None:
    parsed = parse_log(log(7, (0, 100, "a.o", "1"), (0, 250, "b.cu.o", "2"), (0, 250, "b.extra", "2")))
    trace = ninjalog.chrome_trace(parsed.steps)
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["ts"], e["dur"], e["cat"]) for e in events] == [
        ("a.o", 0, 100_000, "host"),
        ("b.cu.o", 0, 250_000, "device"),
    ]
    assert {e["tid"] for e in events} == {0, 1}
    assert events[1]["args"] == {"outputs": ["b.cu.o", "b.extra"]}


def test_timings_for_build(tmp_path: Path) -> None:
    assert ninjalog.timings_for_build(tmp_path) is None
    (tmp_path / ".ninja_log").write_text(rocm_like_log())
    timings = ninjalog.timings_for_build(tmp_path)
    assert timings is not None and timings["classes"]["device"]["count"] == 3
    (tmp_path / ".ninja_log").write_text("# ninja log v3\n")
    broken = ninjalog.timings_for_build(tmp_path)
    assert broken is not None and "v3 is not supported" in broken["error"]
