"""GitHub Actions glue and the pure parts of the caches client."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.actions_cache.caches_client import CachesClient
from pipeline.actions_cache.entries import CacheEntry
from pipeline.errors import GitHubError, UsageError
from pipeline.github import rest, runner
from tests.support.actions_files import read_file_commands


def test_set_output_writes_multiline_values_safely(tmp_path: Path) -> None:
    out = tmp_path / "output"
    env = {"GITHUB_OUTPUT": str(out)}
    assert runner.set_output("key", "llama-ccache--cpu--gcc--b1", env=env)
    # A value that tries to close the block early or inject a second output.
    tricky = "line one\nEOF\nsave=true\nghadelimiter_x"
    assert runner.set_output("restore-keys", tricky, env=env)
    assert read_file_commands(out) == {"key": "llama-ccache--cpu--gcc--b1", "restore-keys": tricky}
    delimiters = re.findall(r"<<(\S+)", out.read_text())
    assert len(set(delimiters)) == 2 and all(d.startswith("ghadelimiter_") for d in delimiters)


def test_outside_actions_nothing_is_written(tmp_path: Path) -> None:
    assert runner.set_output("x", "1", env={}) is False
    assert runner.append_summary("# hi", env={}) is False
    assert list(tmp_path.iterdir()) == []


def test_bad_names_are_refused(tmp_path: Path) -> None:
    env = {"GITHUB_OUTPUT": str(tmp_path / "o")}
    with pytest.raises(UsageError):
        runner.set_output("a\nb", "1", env=env)


def test_format_file_command_refuses_its_delimiter_in_the_value() -> None:
    with pytest.raises(ValueError):
        runner.format_file_command("x", "a DELIM b", "DELIM")


def test_summary_append(tmp_path: Path) -> None:
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    runner.append_summary("### one", env=env)
    runner.append_summary("two\n", env=env)
    assert (tmp_path / "summary.md").read_text() == "### one\ntwo\n"


def test_annotation_format_escapes_data_and_properties() -> None:
    assert runner.format_annotation("warning", "50% done\nnext") == "::warning::50%25 done%0Anext"
    assert (
        runner.format_annotation("error", "bad", file="a,b:c.py", line=3, title="t")
        == "::error file=a%2Cb%3Ac.py,line=3,title=t::bad"
    )
    with pytest.raises(ValueError):
        runner.format_annotation("fatal", "x")


def test_annotate_and_group_on_and_off_actions(capsys: pytest.CaptureFixture[str]) -> None:
    on = {"GITHUB_ACTIONS": "true"}
    runner.annotate("warning", "caches near the limit", env=on)
    with runner.group("listing", env=on):
        print("inside")
    assert (
        capsys.readouterr().out
        == "::warning::caches near the limit\n::group::listing\ninside\n::endgroup::\n"
    )
    runner.annotate("warning", "plain", file="matrix.toml", env={})
    with runner.group("quiet", env={}):
        pass
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "warning: matrix.toml: plain\n"


def test_token_from_env_prefers_github_token_and_never_echoes() -> None:
    assert rest.token_from_env({"GITHUB_TOKEN": "ghs_a", "GH_TOKEN": "ghp_b"}) == "ghs_a"
    assert rest.token_from_env({"GH_TOKEN": "ghp_b"}) == "ghp_b"
    with pytest.raises(GitHubError, match="GITHUB_TOKEN or GH_TOKEN"):
        rest.token_from_env({"GITHUB_TOKEN": "  "})


def test_cache_entry_from_api() -> None:
    item = {
        "id": 505,
        "ref": "refs/heads/main",
        "key": "llama-ccache--cpu--gcc--b1",
        "version": "abc",
        "created_at": "2026-08-01T03:04:05Z",
        "last_accessed_at": "2026-08-02T03:04:05.123+00:00",
        "size_in_bytes": 1234,
    }
    e = CacheEntry.from_api(item, where="GET /caches")
    assert e.id == 505 and e.size_in_bytes == 1234
    assert e.created_at == datetime(2026, 8, 1, 3, 4, 5, tzinfo=UTC)
    for broken in (
        {**item, "id": "505"},
        {**item, "created_at": "yesterday"},
        {k: v for k, v in item.items() if k != "key"},
        [],
    ):
        with pytest.raises(GitHubError, match="GET /caches"):
            CacheEntry.from_api(broken, where="GET /caches")


def test_retry_after_from_headers() -> None:
    now = 1_000_000.0
    assert rest.retry_after_seconds({"Retry-After": "3"}, now) == 3.0
    assert (
        rest.retry_after_seconds({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1000042"}, now) == 42.0
    )
    assert rest.retry_after_seconds({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "10"}, now) == 0.0
    # A 403 without rate-limit headers is a permission problem, not a reason to wait.
    assert rest.retry_after_seconds({"X-RateLimit-Remaining": "17"}, now) is None
    assert rest.retry_after_seconds({"Retry-After": "Thu, 01 Jan 1970 11:46:50 GMT"}, 42000.0) == 410.0


def test_parse_repo() -> None:
    assert rest.parse_repo("ggml-org/llama.cpp") == ("ggml-org", "llama.cpp")
    for bad in ("llama.cpp", "a/b/c", "a b/c", ""):
        with pytest.raises(UsageError, match="OWNER/NAME"):
            rest.parse_repo(bad)


def test_client_repr_hides_the_token() -> None:
    client = CachesClient("o/r", "ghs_secret_token_value", api_url="http://127.0.0.1:9")
    assert "ghs_secret" not in repr(client)
    assert client.caches_url == "http://127.0.0.1:9/repos/o/r/actions/caches"
