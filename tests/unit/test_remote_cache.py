"""The remote cache spec: parsing, redaction, the probe's verdicts and the warnings (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pipeline.ccache.remote import (
    RemoteBackend,
    check_remote,
    parse_remote,
    redact_spec,
    redact_url,
    remote_errors_warning,
    unreachable_warning,
)
from pipeline.ccache.session import CcacheSetup, remote_spec
from pipeline.errors import UsageError
from pipeline.inputs.matrix import CcacheConfig


def test_redis_url_defaults_to_port_6379() -> None:
    [backend] = parse_remote("redis://cache.lan", where="w")
    assert backend.scheme == "redis"
    assert backend.endpoints == (("cache.lan", 6379),)
    assert backend.text == "redis://cache.lan"


def test_http_url_with_path_port_and_properties() -> None:
    [backend] = parse_remote("http://cache.lan:8080/ccache @layout=flat read-only", where="w")
    assert backend.endpoints == (("cache.lan", 8080),)
    assert backend.properties == ("@layout=flat", "read-only")
    # ccache gets the properties back, space-separated.
    assert backend.text == "http://cache.lan:8080/ccache @layout=flat read-only"


def test_http_defaults_to_port_80() -> None:
    assert parse_remote("http://cache.lan", where="w")[0].endpoints == (("cache.lan", 80),)


def test_pipe_separated_attributes_of_older_ccache_versions() -> None:
    [backend] = parse_remote("redis://h:7000/2|connect-timeout=500|read-only", where="w")
    assert backend.endpoints == (("h", 7000),)
    assert backend.properties == ("connect-timeout=500", "read-only")


def test_several_backends() -> None:
    backends = parse_remote("redis://a read-only http://b:81/c", where="w")
    assert [b.url for b in backends] == ["redis://a", "http://b:81/c"]
    assert [b.properties for b in backends] == [("read-only",), ()]


def test_shards_expand_to_one_endpoint_each() -> None:
    [backend] = parse_remote("http://cache-*.lan:8080 shards=a(3),b,c(1.5)", where="w")
    assert backend.endpoints == (("cache-a.lan", 8080), ("cache-b.lan", 8080), ("cache-c.lan", 8080))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("https://cache.lan", "storage helper"),
        ("rediss://cache.lan", "TLS"),
        ("ftp://cache.lan", "unsupported remote cache scheme 'ftp'"),
        ("file:///shared/ccache", "unsupported remote cache scheme 'file'"),
        ("cache.lan:6379", "unsupported remote cache scheme 'cache.lan'"),
        ("cache.lan", "'cache.lan' is not a URL"),
        ("", "empty remote cache URL"),
        ("   ", "empty remote cache URL"),
        ("redis:cache.lan", "expected redis://HOST[:PORT][/DB]"),
        ("http://", "expected http://HOST[:PORT][/PATH]"),
        ("redis://h:0", "port is not a number"),
        ("redis://h:65536", "port is not a number"),
        ("redis://h:abc", "port is not a number"),
        ("redis://h/cache", "optional /DBNUMBER"),
        ("http://cache-*.lan", "needs a shards=... property"),
        ("http://cache.lan shards=a,b", "needs a '*' in the host"),
        ("http://cache-*.lan shards=a,(2)", "bad shard"),
        ("redis://h read-only ??", "neither a URL nor a property"),
    ],
)
def test_bad_specs_name_where_and_what(spec: str, expected: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_remote(spec, where="--remote-cache")
    message = str(info.value)
    assert message.startswith("--remote-cache: ")
    assert expected in message
    assert "\n" not in message


def test_errors_never_show_the_password() -> None:
    with pytest.raises(UsageError) as info:
        parse_remote("redis://user:hunter2@h:notaport", where="w")
    assert "hunter2" not in str(info.value)
    assert "***@h" in str(info.value)


def test_redact() -> None:
    assert redact_url("redis://:pw@h:6379/0") == "redis://***@h:6379/0"
    assert redact_url("http://user:pw@h/cache") == "http://***@h/cache"
    assert redact_url("redis://h:6379") == "redis://h:6379"


def test_redact_spec_keeps_properties() -> None:
    spec = "redis://:pw@a read-only|http://u:p@b/c @bearer-token=x"
    assert redact_spec(spec) == "redis://***@a read-only http://***@b/c @bearer-token=x"


@given(
    user=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", max_size=8),
    password=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!$&'()*+,;=", min_size=4, max_size=20),
)
def test_redact_never_leaks_a_password(user: str, password: str) -> None:
    url = f"redis://{user}:{password}@cache.lan:6379/1"
    shown = redact_url(url)
    assume(password not in "redis://***@cache.lan:6379/1")
    assert password not in shown
    assert shown.endswith("@cache.lan:6379/1")


# --------------------------------------------------------------------------
# check_remote with a scripted probe


def _probe(down: dict[tuple[str, int], str]):  # type: ignore[no-untyped-def]
    calls: list[tuple[str, int, float]] = []

    def probe(backend: RemoteBackend, host: str, port: int, timeout: float) -> str | None:
        calls.append((host, port, timeout))
        return down.get((host, port))

    return probe, calls


def test_all_up() -> None:
    probe, calls = _probe({})
    check = check_remote("redis://a:1 read-only", where="w", timeout=0.5, probe=probe)
    assert check.effective == "redis://a:1 read-only"
    assert check.status == "ok"
    assert check.warnings == ()
    assert calls == [("a", 1, 0.5)]


def test_all_down_leaves_the_local_cache_only() -> None:
    probe, _ = _probe({("a", 1): "connection refused"})
    check = check_remote("redis://:pw@a:1", where="w", probe=probe)
    assert check.effective is None
    assert check.status == "unreachable"
    assert check.warnings == (
        "remote cache redis://***@a:1 is unreachable (connection refused); building with the local cache only",
    )
    assert check.to_record() == {
        "remote": "redis://***@a:1",
        "remote_status": "unreachable",
        "remote_unreachable": [{"url": "redis://***@a:1", "reason": "connection refused"}],
    }


def test_one_of_two_down_keeps_the_other() -> None:
    probe, _ = _probe({("b", 80): "no answer within 2 s"})
    check = check_remote("redis://a:1 http://b/c read-only", where="w", probe=probe)
    assert check.effective == "redis://a:1"
    assert check.status == "partial"
    [warning] = check.warnings
    assert warning.startswith("remote cache http://b/c is unreachable (no answer within 2 s)")
    assert warning.endswith("ccache uses the other remote storage and the local cache")


def test_a_sharded_backend_needs_every_shard() -> None:
    probe, calls = _probe({("c-y", 80): "connection refused"})
    check = check_remote("http://c-*/ shards=x,y,z", where="w", probe=probe)
    assert check.effective is None
    assert check.unreachable == (("http://c-*/ (shard c-y:80)", "connection refused"),)
    # The first shard that fails is enough.
    assert [c[0] for c in calls] == ["c-x", "c-y"]


def test_bad_spec_is_not_probed() -> None:
    probe, calls = _probe({})
    with pytest.raises(UsageError):
        check_remote("https://a", where="w", probe=probe)
    assert calls == []


def test_remote_errors_warning() -> None:
    assert remote_errors_warning("redis://a", 0, 10) is None
    warning = remote_errors_warning("redis://a", 3, 10)
    assert warning == (
        "remote cache redis://a: 3 remote storage error(s) or timeout(s) in 10 compiler calls; "
        "those calls fell back to the local cache"
    )


def test_unreachable_warning_wording() -> None:
    assert unreachable_warning("redis://a", "connection refused", others_left=False).endswith(
        "local cache only"
    )


# --------------------------------------------------------------------------
# How ccache gets the result


def _setup(remote: str | None, spec: str | None, probe_down: bool) -> CcacheSetup:
    check = None
    if spec:
        probe, _ = _probe({("a", 6379): "connection refused"} if probe_down else {})
        check = check_remote(spec, where="w", probe=probe)
    return CcacheSetup(
        executable=Path("ccache"),
        version="4.14.2",
        ccache_dir=Path("/c"),
        base_dir=Path("/w"),
        compiler_check="content",
        max_size="5G",
        stats_log=Path("/s.log"),
        remote=check.effective if check else remote,
        remote_check=check,
    )


def test_env_hands_the_reachable_remote_to_ccache() -> None:
    env = _setup(None, "redis://a", probe_down=False).env(with_stats_log=False)
    assert env["CCACHE_REMOTE_STORAGE"] == "redis://a"


def test_env_blanks_the_remote_when_it_is_down() -> None:
    # Empty: ccache ignores a remote the caller's own environment may name.
    env = _setup(None, "redis://a", probe_down=True).env(with_stats_log=False)
    assert env["CCACHE_REMOTE_STORAGE"] == ""


def test_env_without_remote() -> None:
    assert "CCACHE_REMOTE_STORAGE" not in _setup(None, None, probe_down=False).env(with_stats_log=True)


def test_flag_wins_over_matrix_and_empty_flag_turns_it_off() -> None:
    config = CcacheConfig(remote="redis://matrix")
    assert remote_spec(config, None) == ("redis://matrix", "matrix.toml ccache.remote")
    assert remote_spec(config, "http://flag") == ("http://flag", "--remote-cache")
    assert remote_spec(config, "") == (None, "--remote-cache")
    assert remote_spec(CcacheConfig(), None) == (None, "matrix.toml ccache.remote")
