"""``python -m pipeline simulate`` against a real local HTTP index (TheRock's HTML format)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import pytest

from pipeline.cli import main
from tests.support.httpserver import LocalServer, Response

pytestmark = pytest.mark.integration

SUNDAY = date(2026, 8, 9)
INDEX_PATH = "/tarball-multi-arch/"


def index_page(first: date, last: date, late_sunday: datetime, late_day: date = SUNDAY) -> bytes:
    """An index like TheRock's: nightly tarballs of two families, checksums, one late publish
    (``late_day``'s build, out at ``late_sunday``)."""
    files: list[dict[str, object]] = []
    day = first
    while day <= last:
        published = (
            late_sunday
            if day == late_day
            else datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=8)
        )
        version = f"7.10.0a{day:%Y%m%d}"
        for family in ("gfx110X-all", "gfx1151"):
            name = f"therock-dist-linux-{family}-{version}.tar.gz"
            # The index gives ISO-8601 strings for some entries and Unix epochs for others.
            mtime: object = published.isoformat() if day.day % 2 else int(published.timestamp())
            files.append({"name": name, "mtime": mtime})
            files.append({"name": name + ".sha256sum", "mtime": mtime})
        day += timedelta(days=1)
    script = "const files = " + json.dumps(files) + ";\nrender(files);"
    return f"<!DOCTYPE html><html><body><div id='list'></div><script>{script}</script></body></html>".encode()


@pytest.fixture
def index_url(http_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PIPELINE_HTTP_BACKOFF", "0")
    late = datetime(2026, 8, 9, 18, 0, tzinfo=UTC)
    body = index_page(SUNDAY - timedelta(days=14), SUNDAY + timedelta(days=14), late)
    # One 503 first: the simulator goes through the real client, retries included.
    http_server.route(
        INDEX_PATH,
        Response(503, b"busy"),
        Response(200, body, {"Content-Type": "text/html; charset=utf-8"}),
    )
    return http_server.url(INDEX_PATH)


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(args) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def test_simulate_json_shows_the_week_the_saturday_cutoff_avoids_splitting(
    index_url: str, http_server: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "--from", "2026-08-02", "--to", "2026-08-22", "--cron", "12:00Z"]
    doc = run_json(
        [*args, "--index-url", index_url, "--family", "gfx110X-all", "--os", "linux", "--json"], capsys
    )
    assert http_server.hits(INDEX_PATH) == 2
    assert doc["family"] == "gfx110X-all" and doc["cron"] == "12:00Z"
    assert doc["builds"] == 29
    policies = doc["policies"]
    assert isinstance(policies, dict)
    assert list(policies) == ["weekly-stable", "weekly", "weekly-sunday", "latest"]
    # Saturday's build was on time: weekly-stable and weekly agree run for run.
    assert policies["weekly-stable"]["runs"] == policies["weekly"]["runs"]

    weekly, sunday = policies["weekly"], policies["weekly-sunday"]
    week = {w["sunday"]: w for w in weekly["weeks"]}["2026-08-09"]
    assert week["toolchains"] == ["7.10.0a20260808"]
    sunday_week = {w["sunday"]: w for w in sunday["weeks"]}["2026-08-09"]
    assert sunday_week["toolchains"] == ["7.10.0a20260808", "7.10.0a20260809"]
    assert weekly["split_weeks"] == []
    assert sunday["split_weeks"] == ["2026-08-09"]
    assert weekly["cold_runs"] == 2 and sunday["cold_runs"] == 3
    assert len(weekly["runs"]) == 21
    assert weekly["runs"][0] == {
        "date": "2026-08-02",
        "moment": "2026-08-02T12:00:00Z",
        "week": "2026-08-02",
        "version": "7.10.0a20260801",
    }


def test_simulate_one_policy_console_output(index_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "simulate",
        "--from",
        "2026-08-09",
        "--to",
        "2026-08-15",
        "--cron",
        "12:00Z",
        "--policy",
        "weekly-sunday",
    ]
    assert main([*args, "--index-url", index_url, "--family", "gfx110X-all"]) == 0
    out = capsys.readouterr().out
    assert "weekly-sunday" in out and "2026-08-09" in out
    assert "7.10.0a20260808, 7.10.0a20260809" in out
    assert "│ weekly " not in out


def test_simulate_unknown_family_is_a_usage_error(
    index_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    args = [
        "simulate",
        "--from",
        "2026-08-09",
        "--to",
        "2026-08-10",
        "--index-url",
        index_url,
        "--family",
        "gfx9999",
    ]
    assert main(args) == 2
    assert "no linux gfx9999 tarballs in the index" in capsys.readouterr().err


def test_simulate_bad_window_fails_before_any_download(
    http_server: LocalServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    url = http_server.url(INDEX_PATH)
    args = [
        "simulate",
        "--from",
        "2026-08-10",
        "--to",
        "2026-08-01",
        "--index-url",
        url,
        "--family",
        "gfx110X-all",
    ]
    assert main(args) == 2
    assert "--to 2026-08-01 is before --from 2026-08-10" in capsys.readouterr().err
    assert http_server.hits(INDEX_PATH) == 0


def test_simulate_a_late_saturday_publish_splits_only_weekly(
    http_server: LocalServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Saturday 08-08's build is out Sunday 18:00Z, after the 12:00Z Sunday run.
    monkeypatch.setenv("PIPELINE_HTTP_BACKOFF", "0")
    late = datetime(2026, 8, 9, 18, 0, tzinfo=UTC)
    body = index_page(
        SUNDAY - timedelta(days=14), SUNDAY + timedelta(days=14), late, late_day=date(2026, 8, 8)
    )
    http_server.route(INDEX_PATH, Response(200, body, {"Content-Type": "text/html; charset=utf-8"}))
    args = [
        "simulate",
        "--from",
        "2026-08-02",
        "--to",
        "2026-08-22",
        "--cron",
        "12:00Z",
        "--family",
        "gfx1151",
    ]
    doc = run_json([*args, "--index-url", http_server.url(INDEX_PATH), "--json"], capsys)
    policies = doc["policies"]
    assert isinstance(policies, dict)
    stable, weekly = policies["weekly-stable"], policies["weekly"]
    assert stable["split_weeks"] == [] and weekly["split_weeks"] == ["2026-08-09"]
    assert {w["sunday"]: w["toolchains"] for w in stable["weeks"]}["2026-08-09"] == ["7.10.0a20260807"]
    assert {w["sunday"]: w["toolchains"] for w in weekly["weeks"]}["2026-08-09"] == [
        "7.10.0a20260807",
        "7.10.0a20260808",
    ]
    assert stable["cold_run_dates"] == ["2026-08-09", "2026-08-16"]
    assert weekly["cold_run_dates"] == ["2026-08-09", "2026-08-10", "2026-08-16"]

    # The console table shows both side by side, the split week in weekly's column only.
    monkeypatch.setenv("COLUMNS", "200")
    assert main([*args, "--index-url", http_server.url(INDEX_PATH)]) == 0
    out = capsys.readouterr().out
    assert "weekly-stable" in out
    assert out.count("7.10.0a20260807, 7.10.0a20260808") == 1
    # On a narrow terminal the versions fold onto more lines but are never cut short.
    monkeypatch.setenv("COLUMNS", "80")
    assert main([*args, "--index-url", http_server.url(INDEX_PATH)]) == 0
    narrow = capsys.readouterr().out
    assert "…" not in narrow and "7.10.0a2026080" in narrow


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["--from", "0001-01-01", "--to", "2026-08-01"],
            "--from 0001-01-01 is outside the dates a run can have (1970 to 2199)",
        ),
        (
            ["--from", "2026-08-01", "--to", "9999-12-31"],
            "--to 9999-12-31 is outside the dates a run can have (1970 to 2199)",
        ),
    ],
)
def test_simulate_a_date_out_of_range_is_one_line(
    http_server: LocalServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    expected: str,
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    url = http_server.url(INDEX_PATH)
    assert main(["simulate", *flags, "--index-url", url, "--family", "gfx110X-all"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {expected}"]
    assert http_server.hits(INDEX_PATH) == 0


def test_a_year_replayed_through_the_cli_reports_the_cold_nights_with_and_without_the_warm_up(
    http_server: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.therock_history import year_of_builds
    from tests.support.therock_index import html_page

    builds, late = year_of_builds(1)
    entries: list[tuple[str, object]] = [(b.name, b.published) for b in builds]
    http_server.route("/year/", Response(200, html_page(entries).encode(), {"Content-Type": "text/html"}))
    year = ["simulate", "--from", "2026-01-01", "--to", "2026-12-31", "--index-url", http_server.url("/year/"),
            "--family", "gfx110X-all", "--os", "linux", "--policy", "weekly-stable", "--json"]  # fmt: skip
    doc = run_json(year, capsys)
    weekly = doc["policies"]["weekly-stable"]  # type: ignore[index]
    assert doc["warm_cron"] == "18:17Z"
    assert len(weekly["warm_ups"]) == 52
    assert weekly["cold_runs"] == 52
    # Each remaining cold night is the Sunday after a Saturday whose build came out after the warm-up.
    assert weekly["late_saturdays"] == sorted(
        d.isoformat() for d in late if date(2026, 1, 1) <= d < date(2026, 12, 26)
    )
    assert weekly["cold_runs_with_warm_up"] == len(weekly["late_saturdays"]) == 7
    assert [date.fromisoformat(d) - timedelta(days=1) for d in weekly["cold_run_dates_with_warm_up"]] == [
        date.fromisoformat(d) for d in weekly["late_saturdays"]
    ]
    # --no-warm-up: the seed's rule alone.
    plain = run_json([*year, "--no-warm-up"], capsys)
    assert "warm_ups" not in plain["policies"]["weekly-stable"]  # type: ignore[index]
