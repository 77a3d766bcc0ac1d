"""The nightly's history, leg by leg (pipeline.report.history): pure, from hand-written records."""

from __future__ import annotations

from pipeline.report.history import Night, cold_without_change, leg_history, summary_lines
from pipeline.results.record import LegRecord


def _record(
    leg: str,
    hits: int,
    misses: int,
    toolchain: str,
    *,
    previous: str | None = None,
    wall: float = 600.0,
    status: str = "success",
) -> LegRecord:
    ccache: dict[str, object] = {"hits": hits, "misses": misses}
    if previous is not None:
        ccache["previous_toolchain"] = previous
    return LegRecord(
        leg=leg,
        backend="rocm",
        os="linux",
        started="2026-11-30T06:00:00Z",
        status=status,
        wall_seconds=wall,
        ccache=ccache,
        toolchain={"identity": toolchain},
    )


def _nights() -> list[Night]:
    return [
        Night(
            run_id=1,
            label="2026-11-28 #10",
            conclusion="success",
            records=(_record("rocm", 90, 10, "rocm-7.1"), _record("cpu", 50, 50, "gcc-12")),
        ),
        # A new ROCm build: cold, expected. cpu's cache broke although gcc stayed.
        Night(
            run_id=2,
            label="2026-11-29 #11",
            conclusion="success",
            records=(_record("rocm", 5, 95, "rocm-7.2", wall=1800.0), _record("cpu", 1, 99, "gcc-12")),
        ),
        # The record names the toolchain that filled its cache: it, not the previous night, decides.
        Night(
            run_id=3,
            label="2026-11-30 #12",
            conclusion="failure",
            records=(_record("rocm", 99, 1, "rocm-7.2", previous="rocm-7.2"),),
        ),
    ]


def test_each_leg_is_a_series_of_its_nights_oldest_first() -> None:
    series = leg_history(_nights())
    assert list(series) == ["cpu", "rocm"]
    assert [p.night for p in series["rocm"]] == ["2026-11-28 #10", "2026-11-29 #11", "2026-11-30 #12"]
    assert [p.hit_rate for p in series["rocm"]] == [0.9, 0.05, 0.99]
    assert [p.wall_seconds for p in series["rocm"]] == [600.0, 1800.0, 600.0]
    # cpu did not run on the third night: its series has two points, not a gap filled with zero.
    assert [p.hit_rate for p in series["cpu"]] == [0.5, 0.01]


def test_a_toolchain_change_is_marked_on_its_night_only() -> None:
    series = leg_history(_nights())
    assert [p.toolchain_changed for p in series["rocm"]] == [False, True, False]
    assert [p.toolchain_changed for p in series["cpu"]] == [False, False]


def test_a_record_that_names_the_cache_s_toolchain_decides_over_the_previous_night() -> None:
    nights = [
        Night(run_id=1, label="a", conclusion=None, records=(_record("rocm", 1, 1, "rocm-7.1"),)),
        Night(
            run_id=2,
            label="b",
            conclusion=None,
            records=(_record("rocm", 1, 1, "rocm-7.1", previous="rocm-7.0"),),
        ),
    ]
    assert [p.toolchain_changed for p in leg_history(nights)["rocm"]] == [False, True]


def test_cold_nights_with_an_unchanged_toolchain_are_the_alarm() -> None:
    series = leg_history(_nights())
    assert cold_without_change(series["cpu"], 0.6) == ["2026-11-28 #10", "2026-11-29 #11"]
    # rocm's cold night came with a new toolchain: no alarm.
    assert cold_without_change(series["rocm"], 0.6) == []


def test_summary_lines_say_the_latest_night_and_the_alarms() -> None:
    lines = summary_lines(leg_history(_nights()), 0.6)
    assert lines == [
        "cpu: 2 nights, last 2026-11-29 #11: 1% hits, 10.0 min; 0 toolchain changes; "
        "cold with an unchanged toolchain on 2026-11-28 #10, 2026-11-29 #11",
        "rocm: 3 nights, last 2026-11-30 #12: 99% hits, 10.0 min; 1 toolchain change",
    ]


def _zipped(name: str, data: bytes) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    return buf.getvalue()


def test_an_artifact_s_record_is_read_within_bounds() -> None:
    import pytest

    from pipeline.errors import GitHubError
    from pipeline.report.history_fetch import MAX_RECORD_BYTES, record_from_zip

    with pytest.raises(GitHubError, match=r"^run 1: record\.json is nested too deep to read$"):
        record_from_zip(_zipped("record.json", b"[" * 100_000 + b"]" * 100_000), "run 1")
    # Over the bound by its stated size: refused before it is inflated.
    with pytest.raises(
        GitHubError, match=r"^run 1: record\.json is .*, over the 4\.0 MiB it may be; refused unread$"
    ):
        record_from_zip(_zipped("record.json", b" " * (MAX_RECORD_BYTES + 1)), "run 1")
    with pytest.raises(GitHubError, match=r"^run 1: record\.json is not JSON"):
        record_from_zip(_zipped("record.json", b"{not json"), "run 1")


def _patched(
    data: bytes, *, flags: int | None = None, method: int | None = None, corrupt: bool = False
) -> bytes:
    """``data`` (a one-member zip) with its member's general-purpose flags or compression method rewritten in
    both headers, or its deflate stream's bytes replaced (sizes and CRC kept): a zip that lists a record
    whose bytes cannot be read."""
    import struct

    raw = bytearray(data)
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    if flags is not None:
        struct.pack_into("<H", raw, local + 6, flags)
        struct.pack_into("<H", raw, central + 8, flags)
    if method is not None:
        struct.pack_into("<H", raw, local + 8, method)
        struct.pack_into("<H", raw, central + 10, method)
    if corrupt:
        name_len, extra_len = struct.unpack_from("<HH", raw, local + 26)
        start = local + 30 + name_len + extra_len
        size = struct.unpack_from("<I", raw, local + 18)[0]
        raw[start : start + size] = b"\xff" * size
    return bytes(raw)


def test_a_record_that_cannot_be_inflated_is_a_broken_artifact_not_a_traceback() -> None:
    """Before, encrypted, an unknown compression method, a corrupt deflate stream ended in RuntimeError,
    NotImplementedError and zlib.error; each is the one GitHubError report --history says and goes on after."""
    import pytest

    from pipeline.errors import GitHubError
    from pipeline.report.history_fetch import record_from_zip

    good = _zipped(
        "record.json", b'{"leg": "cpu", "backend": "cpu", "os": "linux", "started": "x"}' + b" " * 200
    )
    for broken in (_patched(good, flags=0x1), _patched(good, method=99), _patched(good, corrupt=True)):
        with pytest.raises(GitHubError, match=r"^run 1: not a readable zip of a record: "):
            record_from_zip(broken, "run 1")
