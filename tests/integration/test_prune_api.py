"""`python -m pipeline prune` against a fake GitHub API served over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.actions_cache.cache_keys import cache_key, toolchain_cache_key
from pipeline.actions_cache.caches_client import CachesClient
from pipeline.errors import GitHubError
from pipeline.util.http_retry import RetryPolicy
from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

REPO = "octo/llama"
TOKEN = "ghs_fake_token_1234567890"
MAIN = "refs/heads/main"
PR = "refs/pull/12/merge"
ROCM = "rocm-linux-gfx110X"


def day(n: int) -> str:
    return f"2026-08-{n:02d}T03:00:00Z"


# (id, ref, key, created day): the ids a keep=2 prune must delete are listed in DELETED.
CACHES = [
    # main / cpu: two compiler generations, vanilla and mix tags -> one group of 5.
    (101, MAIN, cache_key("cpu", "gcc-12.2.0", "b100"), 1),
    (102, MAIN, cache_key("cpu", "gcc-12.2.0", "b101-mix-1a2b3c4"), 2),
    (103, MAIN, cache_key("cpu", "gcc-12.2.0", "b102"), 3),
    (104, MAIN, cache_key("cpu", "gcc-13.1.0", "b103"), 4),
    (105, MAIN, cache_key("cpu", "gcc-13.1.0", "b104-mix-abcdef0"), 5),
    # main / cpu-avx (a leg whose name extends another's): its own group of 1.
    (111, MAIN, cache_key("cpu-avx", "gcc-13.1.0", "b104"), 1),
    # main / ROCm: three weekly toolchains -> one group of 4.
    (121, MAIN, cache_key(ROCM, "rocm-10.1.0a20260718", "b100"), 1),
    (122, MAIN, cache_key(ROCM, "rocm-10.1.0a20260725", "b101"), 8),
    (123, MAIN, cache_key(ROCM, "rocm-10.1.0a20260801", "b102"), 15),
    (124, MAIN, cache_key(ROCM, "rocm-10.1.0a20260801", "b103-mix-1a2b3c4"), 16),
    # main / ROCm toolchain archives: a group of 3.
    (131, MAIN, toolchain_cache_key(ROCM, "rocm-10.1.0a20260718"), 1),
    (132, MAIN, toolchain_cache_key(ROCM, "rocm-10.1.0a20260725"), 8),
    (133, MAIN, toolchain_cache_key(ROCM, "rocm-10.1.0a20260801"), 15),
    # the pull request's ref: its own cpu group of 3, older than main's.
    (141, PR, cache_key("cpu", "gcc-12.2.0", "b100"), 1),
    (142, PR, cache_key("cpu", "gcc-13.1.0", "b101"), 2),
    (143, PR, cache_key("cpu", "gcc-13.1.0", "b102"), 3),
    # Not ours: never touched, however old.
    (201, MAIN, "setup-python-Linux-x64-24.04-Ubuntu-python-3.12.4-pip-abc", 1),
    (202, MAIN, "ccache-cpu-gcc-12-b100", 1),
    (203, PR, "node-cache-Linux-x64-npm-deadbeef", 1),
    (204, MAIN, "llama-ccache-cpu-gcc-12-b99", 1),  # an older scheme: warned about, left alone
    (205, MAIN, "llama-ccache--cpu--gcc-12--latest", 1),
]
DELETED = {101, 102, 103, 121, 122, 131, 141}
SIZE = 1000


@pytest.fixture
def gh(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    for var in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL"):
        monkeypatch.delenv(var, raising=False)
    with FakeGitHub(repo=REPO, token=TOKEN, max_per_page=4) as server:
        rows = list(CACHES)
        random.Random(5).shuffle(rows)  # the server's order is no order
        for ident, ref, key, created in rows:
            server.add_cache(ident, key, ref=ref, created_at=day(created), size=SIZE)
        yield server


def prune(
    gh: FakeGitHub,
    *args: str,
    token: str | None = TOKEN,
    matrix: Path = ROOT / "matrix.toml",
    extra_env: dict[str, str] | None = None,
):  # type: ignore[no-untyped-def]
    env = {"PIPELINE_HTTP_BACKOFF": "0.05", **(extra_env or {})}
    if token is not None:
        env["GITHUB_TOKEN"] = token
    return run_pipeline(
        ["--matrix", str(matrix), "prune", "--repo", REPO, "--api-url", gh.api_url, *args], env=env
    )


def test_dry_run_plans_exactly_and_deletes_nothing(gh: FakeGitHub) -> None:
    proc = prune(gh, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    planned = {e["id"] for g in out["plan"]["groups"] for e in g["delete"]}
    assert planned == DELETED
    assert out["result"] is None
    assert out["plan"]["bytes_freed"] == len(DELETED) * SIZE
    assert out["plan"]["foreign_count"] == 3
    assert {e["id"] for e in out["plan"]["malformed"]} == {204, 205}
    assert gh.deleted == []
    assert gh.hits("DELETE") == 0
    # 21 caches at 4 per page: every page was fetched, following Link.
    assert sorted(int(r.query.get("page", ["1"])[0]) for r in gh.requests) == [1, 2, 3, 4, 5, 6]
    assert "llama-ccache-cpu-gcc-12-b99" in proc.stderr and "does not parse" in proc.stderr


def test_apply_deletes_exactly_the_old_generations_through_502_and_429(
    gh: FakeGitHub, tmp_path: Path
) -> None:
    gh.fault("GET", r"&page=3$", 502)
    gh.fault("DELETE", r"/caches/\d+$", 429, headers={"Retry-After": "1"})
    summary = tmp_path / "summary.md"
    started = time.monotonic()
    proc = prune(
        gh, "--apply", "--json", extra_env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert proc.returncode == 0, proc.stderr
    assert set(gh.deleted) == DELETED
    assert len(gh.deleted) == len(DELETED)  # each once
    assert gh.hits("GET", 502) == 1 and gh.hits("DELETE", 429) == 1
    assert time.monotonic() - started >= 1.0  # Retry-After was honoured
    result = json.loads(proc.stdout)["result"]
    assert set(result["deleted"]) == DELETED
    assert result["bytes_freed"] == len(DELETED) * SIZE
    text = summary.read_text()
    assert "### Cache prune" in text and "(dry run)" not in text
    assert f"`{cache_key('cpu', 'gcc-12.2.0', 'b100')}`" in text
    assert TOKEN not in proc.stdout + proc.stderr + text
    # Running again finds nothing more to delete.
    again = prune(gh, "--apply", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["result"]["deleted"] == []


def test_console_table_reports_groups_and_bytes(gh: FakeGitHub) -> None:
    proc = prune(gh, "--apply")
    assert proc.returncode == 0, proc.stderr
    assert "deleted 7 caches, freed 6.8 KiB" in proc.stdout
    assert ROCM in proc.stdout and "refs/pull/12/merge" in proc.stdout


def test_size_warning_from_matrix_github_section(gh: FakeGitHub, tmp_path: Path) -> None:
    text = (
        (ROOT / "matrix.toml")
        .read_text()
        .replace("cache_limit_bytes = 10737418240", "cache_limit_bytes = 25000")
    )
    assert "cache_limit_bytes = 25000" in text
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(text)
    proc = prune(gh, matrix=matrix, extra_env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 0, proc.stderr
    assert "::warning::Actions caches use 20.5 KiB of 24.4 KiB (84%" in proc.stdout


@pytest.mark.parametrize(
    ("setup", "token", "expected"),
    [
        ("none", "wrong-token", "HTTP 401"),
        ("none", None, "no GitHub token"),
        ("malformed", TOKEN, "malformed JSON"),
        ("not-a-list", TOKEN, "expected a list under 'actions_caches'"),
        ("forbidden", TOKEN, "HTTP 403"),
        ("rate-limit-far", TOKEN, "rate limited"),
        ("always-500", TOKEN, "failed after 5 attempts: HTTP 500"),
    ],
)
def test_errors_are_one_line_and_delete_nothing(
    gh: FakeGitHub, setup: str, token: str | None, expected: str
) -> None:
    if setup == "malformed":
        gh.fault("GET", r"&page=4$", 200, body=b'{"total_count": 21, "actions_caches": [')
    elif setup == "not-a-list":
        gh.fault("GET", r"&page=2$", 200, body=b'{"total_count": 21}')
    elif setup == "forbidden":
        gh.fault("GET", r"caches", 403, body=b'{"message": "Resource not accessible by integration"}')
    elif setup == "rate-limit-far":
        reset = str(int(time.time()) + 3600)
        gh.fault("GET", r"&page=2$", 403, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset})
    elif setup == "always-500":
        gh.fault("GET", r"caches", 500, times=99)
    proc = prune(gh, "--apply", token=token)
    assert proc.returncode != 0
    err_lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(err_lines) == 1 and expected in err_lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert gh.deleted == [] and gh.hits("DELETE") == 0
    if token:
        assert token not in proc.stdout + proc.stderr
    if token is None:
        assert gh.requests == []


def test_unknown_repository_is_a_404(gh: FakeGitHub) -> None:
    proc = run_pipeline(
        ["prune", "--repo", "octo/missing", "--api-url", gh.api_url, "--apply"],
        cwd=ROOT,
        env={"GITHUB_TOKEN": TOKEN},
    )
    assert proc.returncode == GitHubError.exit_code
    assert "HTTP 404" in proc.stderr and "octo/missing" in proc.stderr
    assert gh.deleted == []


def test_client_waits_what_retry_after_and_rate_limit_reset_ask(gh: FakeGitHub) -> None:
    now = 1_000_000.0
    gh.fault("GET", r"&page=2$", 429, headers={"Retry-After": "7"})
    gh.fault(
        "GET",
        r"&page=3$",
        403,
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(now) + 30)},
    )
    gh.fault("GET", r"&page=4$", 503)
    waits: list[float] = []
    client = CachesClient(REPO, TOKEN, api_url=gh.api_url, retry=RetryPolicy(backoff=0.25), sleep=waits.append,
                          clock=lambda: now)  # fmt: skip
    entries = client.list_caches()
    assert {e.id for e in entries} == {row[0] for row in CACHES}
    # What the server asked for, exactly; the policy's own wait with its jitter (50-100% of the backoff).
    assert waits[:2] == [7.0, 30.0] and 0.125 <= waits[2] <= 0.25 and len(waits) == 3, waits
    assert client.requests_made == 6 + 3


def test_client_refuses_a_wait_over_its_bound(gh: FakeGitHub) -> None:
    gh.fault("GET", r"caches", 429, headers={"Retry-After": "600"})
    waits: list[float] = []
    client = CachesClient(REPO, TOKEN, api_url=gh.api_url, retry=RetryPolicy(max_wait=60), sleep=waits.append)
    with pytest.raises(GitHubError, match="rate limited for 600 s"):
        client.list_caches()
    assert waits == []


def test_delete_of_a_vanished_cache_is_not_an_error(gh: FakeGitHub) -> None:
    client = CachesClient(REPO, TOKEN, api_url=gh.api_url)
    assert client.delete_cache(101) is True
    assert client.delete_cache(101) is False
    assert gh.deleted == [101]


def test_an_echoed_token_is_never_printed_and_a_retry_says_why(gh: FakeGitHub) -> None:
    # A hostile or buggy server echoes the token in its bodies; one 503 first, then a 403.
    echo = json.dumps({"message": f"denied for token {TOKEN} (Authorization: Bearer {TOKEN})"}).encode()
    gh.fault("GET", r"caches", 503, body=echo)
    gh.fault("GET", r"caches", 403, body=echo)
    proc = prune(gh, "--apply")
    assert proc.returncode == GitHubError.exit_code
    assert TOKEN not in proc.stdout + proc.stderr
    wait, error = proc.stderr.strip().splitlines()
    assert wait.startswith("GET ") and "HTTP 503" in wait and "attempt 1 of " in wait and wait.endswith(" s")
    assert "HTTP 403" in error and "denied for token ***" in error
    assert gh.deleted == []
