"""The settings table: one precedence rule (flag > environment > matrix.toml > default) for every input."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from pipeline.errors import UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import read_inputs

ROOT = Path(__file__).resolve().parents[2]

VALUES = {
    "matrix": ("a.toml", "b.toml", None),
    "now": ("2026-08-07T12:00:00Z", "2026-01-01T00:00:00Z", None),
    "rocm_version": ("latest", "10.1.0a20260807", "weekly"),
    "index_url": ("http://127.0.0.1:1/flag/", "http://127.0.0.1:2/env/", "http://127.0.0.1:3/matrix/"),
    "tag": ("b1", "b2", "latest"),
    "resolved": ("flag.json", "env.json", None),
    "source_archive": ("flag.tar.gz", "env.tar.gz", None),
    "rocm_path": ("/flag/rocm", "/env/rocm", None),
    "out": ("flag-out", "env-out", None),
    "ccache_dir": ("flag-cache", "env-cache", None),
    "remote_cache": ("redis://127.0.0.1:1", None, "redis://127.0.0.1:3"),
    "legs": ("cpu", "cuda vulkan", None),
    "cache_home": (None, "/env/home", None),
    "download_cache": (None, "/env/dl", None),
    "toolchain_dir": (None, "/env/tc", None),
    "cache_max_age": ("7", "14", None),
    "cache_max_size": ("10", "20", None),
    "git_url_template": (None, "file:///env/{repo}", None),
    "http_backoff": (None, "0.5", None),
    "github_token": (None, "env-token", None),
    "repo": ("o/flag", "o/env", None),
    "api_url": ("http://127.0.0.1:1/api", "http://127.0.0.1:2/api", None),
    "status": ("failure", "success", None),
    "stale_days": ("3", "0.5", 2.0),
    "rocm_max_age": (None, "30", 21.0),
    "rocm_stale": (None, "fail", "warn"),
    "force": (None, "true", None),
    "wait_lock": ("30", "5", None),
    "heartbeat": (None, "1.5", None),
    "http_retry_budget": (None, "45", None),
    # --debug is a switch (store_true), read before the run's inputs: only its variable goes through pick.
    "debug": (None, "1", None),
    "signing_pfx": ("flag.pfx", "env.pfx", None),
    "signing_password": (None, "env-password", None),
    "signing_ca": ("flag-ca.pem", "env-ca.pem", None),
    "signing_timestamp_url": (None, "http://127.0.0.1:4/tsa", None),
}


def test_every_setting_has_a_case_and_one_name() -> None:
    assert sorted(VALUES) == sorted(s.name for s in S.SETTINGS)
    flags = [f for s in S.SETTINGS if s.flag for f in (s.flag, *s.flag_aliases)]
    envs = [v for s in S.SETTINGS for v in s.env]
    assert len(flags) == len(set(flags)) and len(envs) == len(set(envs))


@pytest.mark.parametrize("setting", S.SETTINGS, ids=lambda s: s.name)
def test_flag_beats_environment_beats_matrix_beats_default(setting: S.Setting) -> None:
    flag, env, matrix = VALUES[setting.name]
    environ = {setting.env[0]: env} if setting.env and env is not None else {}
    parse = setting.parse
    if flag is not None and setting.flag:
        got = S.pick(setting, flag=flag, environ=environ, matrix=matrix, default="D")
        assert (got.value, got.where) == (parse(flag, setting.flag), setting.flag)
    if env is not None and setting.env:
        got = S.pick(setting, environ=environ, matrix=matrix, default="D")
        assert (got.value, got.where) == (parse(env, setting.env[0]), setting.env[0])
    if matrix is not None:
        got = S.pick(setting, environ={}, matrix=matrix, default="D")
        assert got.value == matrix and setting.matrix_key and setting.matrix_key in got.where
    assert S.pick(setting, environ={}, default="D") == S.Picked("D", "default")
    # An empty flag or variable counts as not given.
    assert (
        S.pick(
            setting, flag="" if setting.flag else None, environ=dict.fromkeys(setting.env, ""), default="D"
        ).value
        == "D"
    )


@pytest.mark.parametrize("command", ["build", "reproduce"])
@pytest.mark.parametrize("flag", ["--ccache-dir", "--cache-dir"])
def test_a_renamed_flag_keeps_its_older_spelling(command: str, flag: str) -> None:
    from pipeline.cli import build_parser

    argv = [command, "cpu" if command == "build" else "b.tar.gz", flag, "/c"]
    args = build_parser(command).parse_args(argv)
    assert read_inputs(args, environ={}).ccache_dir == Path("/c")
    assert "--cache-dir" in S.markdown_table()


def test_a_second_variable_is_read_when_the_first_is_unset() -> None:
    assert S.pick(S.GITHUB_TOKEN, environ={"GH_TOKEN": "two"}).value == "two"
    assert S.pick(S.GITHUB_TOKEN, environ={"GITHUB_TOKEN": "one", "GH_TOKEN": "two"}).value == "one"


@pytest.mark.parametrize(
    ("setting", "text", "message"),
    [
        (S.ROCM_VERSION, "newest", r"^PIPELINE_ROCM_VERSION: expected 'weekly-stable'"),
        (S.INDEX_URL, "ftp://x/", r"^PIPELINE_ROCM_INDEX_URL: expected an http\(s\):// or file:// URL"),
        (S.INDEX_URL, "http://[::1", r"^PIPELINE_ROCM_INDEX_URL: malformed URL"),
        (S.NOW, "soon", r"^PIPELINE_NOW: not an ISO-8601 moment"),
        (S.TAG, "v1.0", r"^PIPELINE_TAG 'v1.0': expected 'latest'"),
        (S.HTTP_BACKOFF, "fast", r"^PIPELINE_HTTP_BACKOFF: expected seconds"),
        (S.HTTP_BACKOFF, "nan", r"^PIPELINE_HTTP_BACKOFF: expected seconds"),
        (S.HEARTBEAT, "-1", r"^PIPELINE_HEARTBEAT: expected seconds between 0 and 3600"),
    ],
)
def test_a_bad_variable_is_named(setting: S.Setting, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        S.pick(setting, environ={setting.env[0]: text})


def test_run_inputs_apply_the_rule_with_the_matrix(tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        '[rocm]\npolicy = "latest"\nindex_url = "http://127.0.0.1:3/m/"\n[legs.cpu]\nbackend = "cpu"\n'
    )
    env = {"PIPELINE_MATRIX": str(matrix)}
    base = read_inputs(argparse.Namespace(), environ=env)
    assert (base.rocm_policy, base.index_url) == ("latest", "http://127.0.0.1:3/m/")
    assert not base.rocm_policy_overridden
    by_env = read_inputs(argparse.Namespace(), environ={**env, "PIPELINE_ROCM_VERSION": "weekly"})
    assert by_env.rocm_policy == "weekly" and by_env.rocm_policy_overridden
    by_flag = read_inputs(
        argparse.Namespace(rocm_version="10.1.0a20260807"), environ={**env, "PIPELINE_ROCM_VERSION": "weekly"}
    )
    assert by_flag.rocm_policy == "10.1.0a20260807" and by_flag.rocm_policy_where == "--rocm-version"


def test_the_clock_is_read_once_and_a_replayed_now_wins() -> None:
    from datetime import UTC, datetime

    reads: list[int] = []

    def clock() -> datetime:
        reads.append(1)
        return datetime(2026, 11, 30, 17, tzinfo=UTC)

    inputs = read_inputs(
        argparse.Namespace(now="2026-08-07T12:00:00Z"), environ={}, clock=clock, need_matrix=False
    )
    assert reads == [1]
    assert inputs.now == datetime(2026, 8, 7, 12, tzinfo=UTC)
    assert inputs.started == datetime(2026, 11, 30, 17, tzinfo=UTC)


def test_the_docs_table_is_the_generated_one() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- settings-table -->\n(.*?)<!-- /settings-table -->", page, re.S)
    assert match, "docs/settings.md has no settings table between the markers"
    assert match.group(1) == S.markdown_table(), "regenerate it: python -m pipeline settings --markdown"


def test_the_generated_table_keeps_placeholders_visible() -> None:
    # b<digits> and <cache home> would be read as HTML tags by a Markdown renderer and vanish.
    table = S.markdown_table()
    assert "b&lt;digits&gt;" in table and "&lt;cache home&gt;/ccache/&lt;leg&gt;" in table
    assert not re.search(r"<[a-z]", table)


def test_environment_variable_names_live_in_the_settings_table_only() -> None:
    """No module below the CLI names a variable it reads: they are declared in settings.py."""
    # CCACHE_DIR is also what the pipeline hands ccache in its children's environment.
    names = {v for s in S.SETTINGS for v in s.env} - {"CCACHE_DIR"}
    offenders = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        if path.name in ("settings.py",):
            continue
        text = path.read_text(encoding="utf-8")
        for name in names:
            if re.search(rf"['\"]{name}['\"]", text):
                offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []


def test_only_the_inputs_module_reads_the_environment_and_the_clock() -> None:
    readers = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if re.search(r"os\.environ|os\.getenv|datetime\.now\(|utc_now\(\)", text):
            readers.append(rel)
    # inputs builds the run's inputs; cli reports an error before they exist; timeutil defines utc_now.
    assert readers == ["pipeline/cli.py", "pipeline/inputs/run_inputs.py", "pipeline/util/timeutil.py"]


def test_defaults_are_the_values_the_run_uses() -> None:
    """With nothing set, each setting picks its own typed default (the documented ones)."""
    from pathlib import Path

    unset = {s.name: S.pick(s, environ={}).value for s in S.SETTINGS}
    assert unset["matrix"] == "matrix.toml"
    assert unset["out"] == Path("out")
    assert unset["rocm_version"] == "weekly-stable"
    # None: matrix.toml's [[rocm.hosts]] by build date (pipeline/inputs/rocm_hosts.py).
    assert unset["index_url"] is None
    assert unset["api_url"] == "https://api.github.com"
    assert unset["http_backoff"] == 1.0
    assert unset["http_retry_budget"] == 300.0
    assert unset["wait_lock"] == 0.0
    assert unset["force"] is False and unset["debug"] is False
    assert unset["legs"] == ()
    assert unset["tag"] is None and unset["resolved"] is None and unset["repo"] is None


def test_a_default_reads_as_its_value_unless_it_is_computed() -> None:
    assert S.HTTP_BACKOFF.default_display == "1"
    assert S.FORCE.default_display == "false"
    assert S.GITHUB_TOKEN.default_display == "none"
    assert S.WAIT_LOCK.default_display == "0 (fail at once)"
    assert S.NOW.default_display == "the clock"


@pytest.mark.parametrize(
    ("setting", "text", "message"),
    [
        (
            S.CACHE_MAX_AGE,
            "0",
            r"^PIPELINE_CACHE_MAX_AGE_DAYS: expected days above 0 and up to 3650, got '0'$",
        ),
        (S.CACHE_MAX_AGE, "inf", r"^PIPELINE_CACHE_MAX_AGE_DAYS: expected days above 0 and up to 3650"),
        (
            S.CACHE_MAX_SIZE,
            "-2",
            r"^PIPELINE_CACHE_MAX_GB: expected gigabytes above 0 and up to 1e\+06, got '-2'$",
        ),
        (S.WAIT_LOCK, "86401", r"^PIPELINE_WAIT_LOCK: expected seconds between 0 and 86400, got '86401'$"),
    ],
)
def test_amounts_are_bounded_with_their_unit(setting: S.Setting, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        S.pick(setting, environ={setting.env[0]: text})


def test_zero_seconds_is_an_amount_and_zero_days_is_not() -> None:
    assert S.pick(S.WAIT_LOCK, environ={"PIPELINE_WAIT_LOCK": "0"}).value == 0.0
    assert S.pick(S.CACHE_MAX_AGE, environ={"PIPELINE_CACHE_MAX_AGE_DAYS": "0.5"}).value == 0.5


@pytest.mark.parametrize("flag", ["--markdown", "--exit-codes"])
def test_the_settings_command_prints_the_docs_tables(
    flag: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline import cli, errors

    monkeypatch.setattr(cli, "on_sigterm", lambda: None)  # no signal handler installed into pytest
    assert cli.main(["settings", flag]) == 0
    expected = S.markdown_table() if flag == "--markdown" else errors.exit_codes_markdown()
    assert capsys.readouterr().out == expected
