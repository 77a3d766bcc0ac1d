"""The resolver against a real local HTTP server, and the ``resolve``/``replay`` CLI.

The server speaks both index formats (the HTML page and a paged S3 listing),
with gaps in the series, the 7.x and 10.x lines side by side, builds published
after ``now``, and failures (503, 429, truncated transfers, 404, pages that are
not an index).
"""

from __future__ import annotations

import json
import math
import os
import socket
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from pipeline import run_resolution as resolve
from pipeline.errors import IndexFormatError, NetworkError
from pipeline.inputs.matrix import load_matrix
from pipeline.rocm.index import IndexEntry
from pipeline.rocm.index_fetch import fetch_index
from pipeline.rocm.tarball_resolve import resolve_build
from pipeline.util.http_retry import RetryPolicy
from tests.support.httpserver import LocalServer, Response
from tests.support.inputs import make_inputs
from tests.support.pipeline_cli import run_pipeline
from tests.support.therock_index import S3Listing, html_page, name, nightlies, s3_page

# No waits between attempts: these servers answer at once, and a test never sleeps.
NO_WAIT = RetryPolicy(backoff=0)


def LegOptions() -> dict[str, Any]:
    return {}


def rocm_for_leg(matrix: Any, leg: str, flags: dict[str, Any]) -> Any:
    """What a `build LEG` run in this process's environment, at this moment, takes."""
    return resolve.rocm_for_leg(
        make_inputs(matrix, now=datetime.now(UTC), environ=dict(os.environ), **flags), leg
    )


def resolve_run(matrix: Any, *, now: datetime, fetch: Any = None) -> Any:
    return resolve.resolve_run(make_inputs(matrix, now=now, environ=dict(os.environ)), fetch=fetch)


pytestmark = pytest.mark.integration

NOW = datetime(2026, 8, 12, 18, tzinfo=UTC)  # Wednesday; weekly cutoff Saturday 2026-08-08
NOW_ISO = "2026-08-12T18:00:00Z"

# 7.15 retires on 08-05 while 10.1 starts on 07-28; 10.1 skips 08-06 and 08-08 (the cutoff day).
# Every build is published at 09:30 UTC on its date, the last ones (08-13, 08-14) after NOW.
INDEX = (
    nightlies("linux", "gfx110X-all", "7.15.0", date(2026, 7, 10), 27)
    + nightlies(
        "linux", "gfx110X-all", "10.1.0", date(2026, 7, 28), 18, skip=[date(2026, 8, 6), date(2026, 8, 8)]
    )
    + nightlies("windows", "gfx1151", "10.1.0", date(2026, 7, 10), 36)
    + nightlies("linux", "gfx94X-dcgpu", "10.1.0", date(2026, 7, 28), 18)
)
NOISE = [
    (
        name("linux", "gfx110X-all", "10.1.0a20260810") + ".sha256sum",
        datetime(2026, 8, 10, 9, 31, tzinfo=UTC),
    ),
    ("therock-dist-linux-gfx110X-all-10.1.0a.tar.gz", datetime(2026, 8, 10, 9, 31, tzinfo=UTC)),
    ("therock-dist-linux-gfx110X-all-10.1.0a20260811.tar.xz", datetime(2026, 8, 11, 9, 31, tzinfo=UTC)),
    ("index.html", datetime(2026, 8, 14, 10, tzinfo=UTC)),
]
ALL = INDEX + NOISE


def html_route(srv: LocalServer, path: str = "/tarball-multi-arch/", entries=ALL) -> str:
    srv.route(path, Response(200, html_page(entries).encode(), {"Content-Type": "text/html; charset=utf-8"}))
    return srv.url(path)


def s3_route(srv: LocalServer, page_size: int = 25, entries=ALL) -> tuple[str, S3Listing]:
    listing = S3Listing(entries, page_size=page_size)
    srv.route("/bucket/", listing)
    return srv.url("/bucket/"), listing


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/idx/"


def _resolve(
    url: str, policy: str = "weekly", now: datetime = NOW, os_name: str = "linux", family: str = "gfx110X-all"
) -> str:
    return resolve_build(
        os_name, family, policy=policy, now=now, index_url=url, fetch=lambda u: fetch_index(u, retry=NO_WAIT)
    ).version


# --------------------------------------------------------------------------
# Both formats


def test_html_and_paged_xml_give_the_same_index(http_server: LocalServer) -> None:
    html_url = html_route(http_server)
    s3_url, listing = s3_route(http_server, page_size=25)
    from_html = fetch_index(html_url, retry=NO_WAIT)
    from_s3 = fetch_index(s3_url, retry=NO_WAIT)
    assert len(from_html) == len(ALL)
    assert sorted(from_html, key=lambda e: e.name) == sorted(from_s3, key=lambda e: e.name)
    pages = math.ceil(len(ALL) / 25)
    assert len(listing.tokens_seen) == pages > 3
    assert listing.tokens_seen[0] is None and listing.tokens_seen[1] == "tok-25"
    # Every later page asked for ListObjectsV2 with exactly one continuation token.
    later = [r.query for r in http_server.requests if r.path == "/bucket/"][1:]
    assert all(q.startswith("list-type=2&continuation-token=tok-") for q in later)


@pytest.mark.parametrize("fmt", ["html", "s3"])
def test_policies_on_both_formats(http_server: LocalServer, fmt: str) -> None:
    url = html_route(http_server) if fmt == "html" else s3_route(http_server, page_size=40)[0]
    # The cutoff day 08-08 is a gap in 10.1 and 7.15 is retired: the newest on or before is 08-07.
    weekly = resolve_build(
        "linux",
        "gfx110X-all",
        policy="weekly",
        now=NOW,
        index_url=url,
        fetch=lambda u: fetch_index(u, retry=NO_WAIT),
    )
    assert (weekly.version, weekly.cutoff, weekly.policy) == ("10.1.0a20260807", date(2026, 8, 8), "weekly")
    assert weekly.url == url.split("?")[0] + name("linux", "gfx110X-all", "10.1.0a20260807")
    assert weekly.published == datetime(2026, 8, 7, 9, 30, tzinfo=UTC)
    # 08-13 and 08-14 were published after NOW.
    assert _resolve(url, "latest") == "10.1.0a20260812"
    assert _resolve(url, "10.1.0a20260730") == "10.1.0a20260730"
    assert _resolve(url, "weekly", os_name="windows", family="gfx1151") == "10.1.0a20260808"


def test_two_lines_at_once_order_numerically(http_server: LocalServer) -> None:
    url = html_route(http_server)
    # On 08-05 both 7.15.0a20260805 and 10.1.0a20260805 exist: 10.1 is newer though "1" < "7".
    assert _resolve(url, "latest", now=datetime(2026, 8, 5, 12, tzinfo=UTC)) == "10.1.0a20260805"
    # Before 10.1 began, the 7.x line is all there is.
    assert _resolve(url, "weekly", now=datetime(2026, 7, 29, tzinfo=UTC)) == "7.15.0a20260725"


def test_a_build_published_after_now_is_ignored(http_server: LocalServer) -> None:
    url = html_route(http_server)
    assert _resolve(url, "latest", now=datetime(2026, 8, 12, 9, 29, tzinfo=UTC)) == "10.1.0a20260811"
    assert _resolve(url, "latest", now=datetime(2026, 8, 12, 9, 30, tzinfo=UTC)) == "10.1.0a20260812"


def test_one_fetch_for_the_whole_run(http_server: LocalServer, tmp_path: Path) -> None:
    url = html_route(http_server)
    matrix = load_matrix(write_matrix(tmp_path, url))
    resolution = resolve_run(matrix, now=NOW, fetch=lambda u: fetch_index(u, retry=NO_WAIT))
    assert http_server.hits("/tarball-multi-arch/") == 1
    assert {k: v.version for k, v in resolution.legs.items()} == {
        "rocm-linux": "10.1.0a20260807",
        "rocm-win": "10.1.0a20260808",
    }


# --------------------------------------------------------------------------
# Failures


def test_503_then_success(http_server: LocalServer) -> None:
    page = html_page(ALL).encode()
    http_server.route("/idx/", Response(503, b"busy"), Response(200, page))
    assert len(fetch_index(http_server.url("/idx/"), retry=NO_WAIT)) == len(ALL)
    assert http_server.hits("/idx/") == 2


def test_429_with_retry_after_then_success(http_server: LocalServer) -> None:
    page = html_page(ALL).encode()
    http_server.route(
        "/idx/", Response(429, b"slow down", {"Retry-After": "0"}), Response(502), Response(200, page)
    )
    assert len(fetch_index(http_server.url("/idx/"), retry=NO_WAIT)) == len(ALL)
    assert http_server.hits("/idx/") == 3


def test_a_truncated_page_is_retried_then_an_error(http_server: LocalServer) -> None:
    page = html_page(ALL).encode()
    http_server.route("/idx/", Response(200, page[: len(page) // 2], declared_length=len(page)))
    with pytest.raises(NetworkError, match=r"failed after 3 attempts: truncated page \(\d+ bytes read"):
        fetch_index(http_server.url("/idx/"), retry=RetryPolicy(backoff=0, attempts=3))
    assert http_server.hits("/idx/") == 3
    http_server.route("/ok/", Response(200, page[:100], declared_length=len(page)), Response(200, page))
    assert len(fetch_index(http_server.url("/ok/"), retry=NO_WAIT)) == len(ALL)


def test_a_truncated_s3_page_is_an_error(http_server: LocalServer) -> None:
    first = s3_page(INDEX[:10], truncated=True, token="tok-10").encode()
    cut = s3_page(INDEX[10:20]).encode()[:-40]
    http_server.route("/bucket/", Response(200, first), Response(200, cut))
    with pytest.raises(IndexFormatError, match="malformed XML"):
        fetch_index(http_server.url("/bucket/"), retry=NO_WAIT)


def test_404_is_not_retried(http_server: LocalServer) -> None:
    with pytest.raises(NetworkError, match=r"/gone/: HTTP 404"):
        fetch_index(http_server.url("/gone/"), retry=NO_WAIT)
    assert http_server.hits("/gone/") == 1


def test_unreachable_after_retries() -> None:
    with pytest.raises(NetworkError, match=r"failed after 3 attempts: \[Errno \d+\] Connection refused"):
        fetch_index(closed_port_url(), retry=RetryPolicy(backoff=0, attempts=3))


def test_a_listing_that_pages_in_a_loop(http_server: LocalServer) -> None:
    http_server.route("/bucket/", Response(200, s3_page(INDEX[:3], truncated=True, token="same").encode()))
    with pytest.raises(IndexFormatError, match="pages in a loop"):
        fetch_index(http_server.url("/bucket/"), retry=NO_WAIT)


def test_explicit_version_survives_an_unreachable_index() -> None:
    url = closed_port_url()
    resolved = resolve_build(
        "linux",
        "gfx110X-all",
        policy="10.1.0a20260807",
        now=NOW,
        index_url=url,
        fetch=lambda u: fetch_index(u, retry=RetryPolicy(backoff=0, attempts=2)),
    )
    assert resolved.url == url + name("linux", "gfx110X-all", "10.1.0a20260807")
    assert resolved.published is None


# --------------------------------------------------------------------------
# The CLI


def upstream_repo(tmp_path: Path) -> Path:
    """A local llama.cpp stand-in with one old tag, so whole-run resolves need no network."""
    from tests.support.gitrepos import commit_files, init_repo, tag

    repo = tmp_path / "upstream"
    if not repo.exists():
        init_repo(repo)
        when = datetime(2026, 1, 5, tzinfo=UTC)
        commit_files(repo, {"CMakeLists.txt": "project(x)\n"}, "base", when=when)
        tag(repo, "b100", when=when)
    return repo


def write_matrix(tmp_path: Path, index_url: str, *, policy: str = "weekly") -> Path:
    path = tmp_path / "matrix.toml"
    path.write_text(
        f'[source]\nrepo = "{upstream_repo(tmp_path)}"\n\n'
        f'[rocm]\npolicy = "{policy}"\nindex_url = "{index_url}"\n\n'
        '[legs.rocm-linux]\nbackend = "rocm"\nos = "linux"\nfamily = "gfx110X-all"\ntargets = ["gfx1100"]\n\n'
        '[legs.rocm-win]\nbackend = "rocm"\nos = "windows"\nfamily = "gfx1151"\ntargets = ["gfx1151"]\n\n'
        '[legs.cpu]\nbackend = "cpu"\n'
    )
    return path


FAST = {"PIPELINE_HTTP_BACKOFF": "0"}


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    return run_pipeline(
        ["--matrix", str(tmp_path / "matrix.toml"), *args], cwd=tmp_path, env={**FAST, **(env or {})}
    )


def test_cli_json_for_os_and_family(http_server: LocalServer, tmp_path: Path) -> None:
    url = html_route(http_server)
    write_matrix(tmp_path, "http://127.0.0.1:9/unused/")
    proc = cli(
        tmp_path,
        "resolve",
        "--os",
        "linux",
        "--family",
        "gfx110X-all",
        "--now",
        NOW_ISO,
        "--index-url",
        url,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "policy": "weekly",
        "cutoff": "20260808",
        "version": "10.1.0a20260807",
        "file": "therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz",
        "url": url + "therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz",
        "published": "2026-08-07T09:30:00Z",
        "os": "linux",
        "family": "gfx110X-all",
        "index_url": url,
    }


def test_cli_leg_with_env_overrides(http_server: LocalServer, tmp_path: Path) -> None:
    s3_url, _ = s3_route(http_server, page_size=50)
    write_matrix(tmp_path, "http://127.0.0.1:9/unused/")
    env = {"PIPELINE_ROCM_INDEX_URL": s3_url, "PIPELINE_ROCM_VERSION": "latest", "PIPELINE_NOW": NOW_ISO}
    proc = cli(tmp_path, "resolve", "--leg", "rocm-win", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["policy"], data["cutoff"], data["version"]) == ("latest", None, "10.1.0a20260812")
    # The flag beats the environment.
    proc = cli(tmp_path, "resolve", "--leg", "rocm-win", "--json", "--rocm-version", "weekly", env=env)
    assert json.loads(proc.stdout)["version"] == "10.1.0a20260808"
    # Without --json: a readable table with the version.
    proc = cli(tmp_path, "resolve", "--leg", "rocm-win", env=env)
    assert proc.returncode == 0 and "10.1.0a20260812" in proc.stdout


def test_cli_whole_run_writes_the_resolution(http_server: LocalServer, tmp_path: Path) -> None:
    url = html_route(http_server)
    write_matrix(tmp_path, url)
    proc = cli(tmp_path, "resolve", "--now", NOW_ISO)
    assert proc.returncode == 0, proc.stderr
    assert "rocm-linux" in proc.stdout and "10.1.0a20260807" in proc.stdout and "20260808" in proc.stdout
    data = json.loads((tmp_path / "out" / "resolved.json").read_text())
    assert data["now"] == NOW_ISO and data["cutoff"] == "20260808" and data["rocm_policy"] == "weekly"
    assert {k: v["version"] for k, v in data["legs"].items()} == {
        "rocm-linux": "10.1.0a20260807",
        "rocm-win": "10.1.0a20260808",
    }
    assert list((tmp_path / "out").iterdir()) == [tmp_path / "out" / "resolved.json"]
    # The run's source tag is resolved with it: every leg builds the same commit.
    assert (
        data["source"]["tag"] == "b100"
        and len(data["source"]["commit"] or data["source"]["base_commit"]) == 40
    )
    proc = cli(tmp_path, "resolve", "--now", NOW_ISO, "--write", "elsewhere/r.json", "--json")
    assert json.loads(proc.stdout) == json.loads((tmp_path / "elsewhere" / "r.json").read_text())


def test_legs_use_the_parents_resolution_when_the_index_moves(
    http_server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real time: a run without --now, then a build published before the legs run.
    today = datetime.now(UTC).date()
    old = nightlies("linux", "gfx110X-all", "10.1.0", today - timedelta(days=10), 9) + nightlies(
        "windows", "gfx1151", "10.1.0", today - timedelta(days=10), 9
    )
    url = html_route(http_server, entries=old)
    write_matrix(tmp_path, url, policy="latest")
    proc = cli(tmp_path, "resolve")
    assert proc.returncode == 0, proc.stderr
    parent = json.loads((tmp_path / "out" / "resolved.json").read_text())
    expected = (today - timedelta(days=2)).strftime("10.1.0a%Y%m%d")
    assert {v["version"] for v in parent["legs"].values()} == {expected}

    moment = datetime.now(UTC) - timedelta(seconds=1)
    newer = [
        (name(o, f, today.strftime("10.1.0a%Y%m%d")), moment)
        for o, f in (("linux", "gfx110X-all"), ("windows", "gfx1151"))
    ]
    html_route(http_server, entries=old + newer)
    matrix = load_matrix(tmp_path / "matrix.toml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PIPELINE_HTTP_BACKOFF", "0")
    # Standalone (no resolution named), a leg sees the new build, and ignores out/resolved.json.
    assert rocm_for_leg(matrix, "rocm-linux", LegOptions()).version == today.strftime("10.1.0a%Y%m%d")
    # With the parent's resolution (a path, then inline JSON), both legs keep the parent's build.
    hits = http_server.hits("/tarball-multi-arch/")
    monkeypatch.setenv("PIPELINE_RESOLVED", str(tmp_path / "out" / "resolved.json"))
    assert rocm_for_leg(matrix, "rocm-linux", LegOptions()).version == expected
    monkeypatch.setenv("PIPELINE_RESOLVED", (tmp_path / "out" / "resolved.json").read_text())
    assert rocm_for_leg(matrix, "rocm-win", LegOptions()).version == expected
    assert http_server.hits("/tarball-multi-arch/") == hits  # the index was not read again


def test_cli_explicit_version_with_an_unreachable_index(tmp_path: Path) -> None:
    url = closed_port_url()
    write_matrix(tmp_path, url)
    proc = cli(tmp_path, "resolve", "--leg", "rocm-linux", "--rocm-version", "10.1.0a20260807", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["url"] == url + name("linux", "gfx110X-all", "10.1.0a20260807")
    assert "Connection refused" in proc.stderr and "Traceback" not in proc.stderr


ERRORS = {
    # case: (args, route body or None for the good index, exit code, message)
    "unknown family": (
        ["--os", "linux", "--family", "gfx1200-all"],
        None,
        6,
        "unknown ROCm family 'gfx1200-all' for linux",
    ),
    "bad family name": (
        ["--os", "linux", "--family", "navi31"],
        None,
        2,
        "'navi31' is not a TheRock family name",
    ),
    "malformed now": (
        ["--leg", "rocm-linux", "--now", "last tuesday"],
        None,
        2,
        "--now: not an ISO-8601 moment: 'last tuesday'",
    ),
    "malformed version": (
        ["--leg", "rocm-linux", "--rocm-version", "10.1"],
        None,
        2,
        "--rocm-version: expected 'weekly-stable', 'weekly', 'latest', 'stable' or a version",
    ),
    "missing version": (
        ["--leg", "rocm-linux", "--rocm-version", "10.1.0a20260808"],
        None,
        6,
        "10.1.0a20260808 is not in the index; nearest available: ",
    ),
    "empty for the cutoff": (
        ["--leg", "rocm-linux", "--now", "2026-07-10T12:00:00Z"],
        None,
        6,
        "no ROCm linux gfx110X-all build dated on or before the cutoff 20260704",
    ),
    "not a rocm leg": (["--leg", "cpu"], None, 2, "leg 'cpu' is a cpu leg"),
    "unknown leg": (["--leg", "rocm-linus"], None, 2, "did you mean 'rocm-linux'"),
    "half a target": (["--os", "linux"], None, 2, "--os and --family go together"),
    "no file list": (
        ["--leg", "rocm-linux"],
        b"<html><body>moved</body></html>",
        5,
        "no file list in the page",
    ),
    "malformed json": (
        ["--leg", "rocm-linux"],
        b'<script>const files = [{"name": 1,,]</script>',
        5,
        "malformed file list JSON",
    ),
    "malformed xml": (
        ["--leg", "rocm-linux"],
        b"<?xml version='1.0'?><ListBucketResult><Contents>",
        5,
        "malformed XML",
    ),
    "404": (["--leg", "rocm-linux"], 404, 4, "HTTP 404"),
    "whole run, unknown family": ([], "bad-family", 6, "leg rocm-linux: unknown ROCm family"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_cli_errors_are_one_line(http_server: LocalServer, tmp_path: Path, case: str) -> None:
    args, body, code, message = ERRORS[case]
    if body is None:
        url = html_route(http_server)
    elif body == 404:
        url = http_server.url("/nothing-here/")
    elif body == "bad-family":
        url = html_route(http_server, entries=[e for e in ALL if "gfx110X" not in e[0]])
    else:
        assert isinstance(body, bytes)
        http_server.route("/bad/", Response(200, body))
        url = http_server.url("/bad/")
    write_matrix(tmp_path, url)
    proc = cli(tmp_path, "resolve", *args, *(["--now", NOW_ISO] if "--now" not in args else []))
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and message in lines[0]
    assert not (tmp_path / "out").exists()


def test_cli_unreachable_index(tmp_path: Path) -> None:
    write_matrix(tmp_path, closed_port_url())
    proc = cli(tmp_path, "resolve", "--now", NOW_ISO)
    assert proc.returncode == 4
    *waits, error = proc.stderr.strip().splitlines()
    # Each retry's wait says why (what failed, attempt n of m, how long); then the one error line.
    # The one retry policy's five attempts (pipeline/util/http_retry.py), as every other client makes.
    assert [w.split("; ")[1].split(" failed")[0] for w in waits] == [f"attempt {n} of 5" for n in range(1, 5)]
    assert all("Connection refused" in w and w.endswith(" s") for w in waits)
    assert error.startswith("error: ") and "failed after 5 attempts: [Errno 111] Connection refused" in error
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_cli_retry_budget_ends_the_retries_and_says_so(tmp_path: Path) -> None:
    # The first wait (0.5-1 s with jitter) already passes a 0.1 s budget: one attempt, no wait.
    write_matrix(tmp_path, closed_port_url())
    proc = cli(
        tmp_path,
        "resolve",
        "--now",
        NOW_ISO,
        env={"PIPELINE_HTTP_BACKOFF": "1", "PIPELINE_HTTP_RETRY_BUDGET": "0.1"},
    )
    assert proc.returncode == 4
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "failed after 1 attempt (the retry budget of 0.1 s is spent" in proc.stderr
    assert "PIPELINE_HTTP_RETRY_BUDGET" in proc.stderr


# --------------------------------------------------------------------------
# Replay


def test_replay_weekly_windows_are_constant(http_server: LocalServer, tmp_path: Path) -> None:
    write_matrix(tmp_path, html_route(http_server))
    proc = cli(tmp_path, "replay", "--weeks", "3", "--now", NOW_ISO, "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == 21
    assert rows[-1]["moment"] == NOW_ISO and rows[0]["moment"] == "2026-07-23T18:00:00Z"
    weeks: dict[str, list[dict]] = defaultdict(list)
    sf = ZoneInfo("America/Los_Angeles")
    for row in rows:
        local = datetime.fromisoformat(row["moment"]).astimezone(sf).date()
        weeks[(local - timedelta(days=(local.weekday() + 1) % 7)).isoformat()].append(row)
    assert len(weeks) == 4  # Thursday of the first week ... Wednesday of the fourth
    for members in weeks.values():
        assert len({m["cutoff"] for m in members}) == 1
        assert len({json.dumps(m["versions"], sort_keys=True) for m in members}) == 1
    assert [ws[0]["cutoff"] for ws in weeks.values()] == ["20260718", "20260725", "20260801", "20260808"]
    assert [ws[0]["versions"]["rocm-linux"] for ws in weeks.values()] == [
        "7.15.0a20260718",
        "7.15.0a20260725",
        "10.1.0a20260801",
        "10.1.0a20260807",
    ]


def test_replay_table_for_one_leg(http_server: LocalServer, tmp_path: Path) -> None:
    write_matrix(tmp_path, html_route(http_server))
    proc = cli(tmp_path, "replay", "--weeks", "2", "--leg", "rocm-win", "--now", NOW_ISO)
    assert proc.returncode == 0, proc.stderr
    assert "rocm-win" in proc.stdout and "rocm-linux" not in proc.stdout
    assert proc.stdout.count("10.1.0a20260808") == 4  # Sunday 08-09 to Wednesday 08-12
    assert "Sun 2026-08-09" in proc.stdout


def test_replay_bad_weeks(tmp_path: Path) -> None:
    write_matrix(tmp_path, "http://127.0.0.1:9/")
    proc = cli(tmp_path, "replay", "--weeks", "0")
    assert proc.returncode == 2 and "--weeks: expected 1 to 520" in proc.stderr


def test_entries_type_is_public() -> None:
    # The benchmark and the simulator build entries by hand.
    assert IndexEntry("a", None).published is None


# Saturday 08-08's builds were published Sunday 20:00Z, after Sunday's 09:17Z nightly.
LATE_SATURDAY_INDEX = [
    (n, datetime(2026, 8, 9, 20, tzinfo=UTC) if "20260808" in n else t)
    for n, t in nightlies("linux", "gfx110X-all", "10.1.0", date(2026, 7, 20), 30)
    + nightlies("windows", "gfx1151", "10.1.0", date(2026, 7, 20), 30)
]
MONDAY_RUN_ISO = "2026-08-10T09:17:00Z"


def _versions_by_day(rows: list[dict]) -> dict[str, str]:
    return {row["date"]: row["versions"]["rocm-linux"] for row in rows}


def test_replay_of_an_old_weekly_nightly_uses_the_rule_its_resolution_recorded(
    http_server: LocalServer, tmp_path: Path
) -> None:
    url = html_route(http_server, entries=LATE_SATURDAY_INDEX)
    # The old nightly ran the original weekly rule on Monday and recorded it.
    write_matrix(tmp_path, url, policy="weekly")
    proc = cli(tmp_path, "resolve", "--now", MONDAY_RUN_ISO, "--no-source", "--write", "old.json")
    assert proc.returncode == 0, proc.stderr
    old = json.loads((tmp_path / "old.json").read_text())
    assert old["rocm_policy"] == "weekly" and old["legs"]["rocm-linux"]["version"] == "10.1.0a20260808"

    # Today's matrix says weekly-stable; the replay still answers with the old run's rule.
    write_matrix(tmp_path, url, policy="weekly-stable")
    proc = cli(tmp_path, "replay", "--weeks", "1", "--resolution", "old.json", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {row["policy"] for row in rows} == {"weekly"}
    assert rows[-1]["moment"] == MONDAY_RUN_ISO
    by_day = _versions_by_day(rows)
    assert by_day["2026-08-10"] == old["legs"]["rocm-linux"]["version"]
    assert by_day["2026-08-09"] == "10.1.0a20260807"  # the week weekly split
    # --policy names the same rule by hand.
    proc = cli(tmp_path, "replay", "--weeks", "1", "--now", MONDAY_RUN_ISO, "--policy", "weekly", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == rows

    # Without them, the matrix's weekly-stable: Friday's build for the whole week.
    proc = cli(tmp_path, "replay", "--weeks", "1", "--now", MONDAY_RUN_ISO, "--json")
    assert proc.returncode == 0, proc.stderr
    stable = json.loads(proc.stdout)
    assert {row["policy"] for row in stable} == {"weekly-stable"}
    assert (
        _versions_by_day(stable)["2026-08-09"] == _versions_by_day(stable)["2026-08-10"] == "10.1.0a20260807"
    )


def test_replay_rule_conflicts_and_bad_resolutions_are_usage_errors(tmp_path: Path) -> None:
    write_matrix(tmp_path, "http://127.0.0.1:9/")
    proc = cli(tmp_path, "replay", "--policy", "weekly", "--rocm-version", "latest")
    assert proc.returncode == 2
    assert "--policy weekly and --rocm-version latest disagree" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = cli(tmp_path, "replay", "--policy", "weekly_stable")
    assert proc.returncode == 2 and "--policy: expected 'weekly-stable', 'weekly', 'latest'" in proc.stderr
    proc = cli(tmp_path, "replay", "--resolution", "missing.json")
    assert proc.returncode == 2 and "--resolution: neither a resolution file nor inline JSON" in proc.stderr
    (tmp_path / "bad.json").write_text(
        '{"now": "2026-08-10T09:17:00Z", "rocm_policy": "monthly", "legs": {}}'
    )
    proc = cli(tmp_path, "replay", "--resolution", "bad.json")
    assert (
        proc.returncode == 2 and "--resolution bad.json: rocm_policy: expected 'weekly-stable'" in proc.stderr
    )
