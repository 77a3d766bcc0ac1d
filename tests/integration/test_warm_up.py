"""The Saturday warm-up end to end: ``warm-up`` resolves next week's build, the leg compiles it ahead, and
Sunday's first night of the new build restores that cache, hits, and records which run warmed it.

TheRock's index is a real HTTP server on 127.0.0.1 with TheRock's page format
and publish times; the toolchain is the TheRock-shaped tarball of Debian's
clang (tests/support/rocm_leg.py), the project a generated C/C++ one. The
Actions cache between the runs is a folder copy under the key ``cache-key``
prints: what actions/cache restores for the night's restore prefix.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.actions_cache.cache_keys import parse_key
from tests.support.httpserver import LocalServer
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_cpp_project, write_matrix
from tests.support.rocm_leg import (
    COMPILATIONS,
    FAMILY,
    INDEX,
    LEG,
    UNITS,
    make_therock_from_debian_clang,
    serve_published,
)

# The week of Sunday 2025-01-05 (PST, UTC-8): its build is the one dated Saturday 2025-01-04. Its Saturday,
# 2025-01-11, has the next week's build out by 03:00Z; the warm-up runs at 18:17Z; the next week starts
# Sunday 2025-01-12 00:00 in San Francisco, 08:00Z; its first night runs at 09:17Z.
THIS_WEEK = "7.0.0a20250104"
NEXT_WEEK = "7.0.0a20250111"
FRIDAY = "7.0.0a20250110"
WARM_UP_AT = "2025-01-11T18:17:00Z"
WINDOW = "2025-01-12T08:00:00Z"
SUNDAY_NIGHT = "2025-01-12T09:17:00Z"
RUN = {
    "GITHUB_SERVER_URL": "https://github.example",
    "GITHUB_REPOSITORY": "octo/llama",
    "GITHUB_RUN_ID": "4242",
}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def three_builds(saturday_published: str) -> dict[str, str]:
    """This week's, Friday's and next week's (dated Saturday) builds, the last published at ``saturday_published``."""
    return {THIS_WEEK: "2025-01-04T03:00:00Z", FRIDAY: "2025-01-10T03:00:00Z", NEXT_WEEK: saturday_published}


def serve(server: LocalServer, tarball: bytes, published: dict[str, str]) -> str:
    return serve_published(server, tarball, {version: at(when) for version, when in published.items()})


def workspace(tmp_path: Path, index_url: str, *, policy: str = "weekly-stable", warm_up: bool = True) -> Path:
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=UNITS)
    write_matrix(
        ws / "matrix.toml",
        extra=f"""
[rocm]
policy = "{policy}"
index_url = "{index_url}"
warm_up = {str(warm_up).lower()}

[legs.{LEG}]
backend = "rocm"
os = "linux"
family = "{FAMILY}"
targets = ["gfx1100"]
""",
    )
    return ws


def outputs(path: Path) -> dict[str, str]:
    """The step outputs a command wrote to $GITHUB_OUTPUT (name=value lines, or name<<delimiter blocks)."""
    found: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        name, sep, value = lines[i].partition("=")
        if sep:
            found[name] = value
        else:
            name, _, delimiter = lines[i].partition("<<")
            end = lines.index(delimiter, i + 1)
            found[name] = "\n".join(lines[i + 1 : end])
            i = end
        i += 1
    return found


def warm_up(ws: Path, tmp_path: Path, *extra: str) -> tuple[dict, dict[str, str]]:
    out_file = tmp_path / "warm-up-outputs"
    out_file.unlink(missing_ok=True)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(out_file), **RUN}
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "warm-up",
            "--now",
            WARM_UP_AT,
            "--out",
            str(ws / "out"),
            "--no-source",
            "--json",
            *extra,
        ],
        env=env,
        check=True,
    )
    return json.loads(proc.stdout), outputs(out_file)


def pipeline(ws: Path, *args: str, resolved: Path, env: dict[str, str] | None = None) -> str:
    proc = run_pipeline(
        ["--matrix", str(ws / "matrix.toml"), *args], env={"PIPELINE_RESOLVED": str(resolved), **(env or {})}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def build(ws: Path, cache: Path, resolved: Path) -> dict:
    pipeline(ws, "build", LEG, "--source", str(ws / "project"), "--out", str(ws / "out"), "--cache-dir",
             str(cache), "--no-bundle", resolved=resolved)  # fmt: skip
    return json.loads((ws / "out" / LEG / "record.json").read_text())  # type: ignore[no-any-return]


def key_of(ws: Path, resolved: Path) -> tuple[str, str]:
    data = json.loads(pipeline(ws, "cache-key", LEG, "--tag", "b7", "--json", resolved=resolved))
    return data["key"], data["restore_keys"][0]


@pytest.fixture(scope="module")
def therock(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    # One tarball for the file's tests: compressing clang takes seconds, and no test changes it.
    return make_therock_from_debian_clang(tmp_path_factory.mktemp("therock") / "therock.tar.gz").read_bytes()


def test_saturdays_warm_up_compiles_next_weeks_build_and_sundays_night_hits_it(
    http_server: LocalServer, therock: bytes, tmp_path: Path
) -> None:
    index_url = serve(http_server, therock, three_builds("2025-01-11T03:00:00Z"))
    ws = workspace(tmp_path, index_url)
    plan, out = warm_up(ws, tmp_path)
    assert plan["warm"] is True and plan["legs"] == [LEG]
    assert plan["window"] == WINDOW
    assert plan["builds"][LEG] == {"now": THIS_WEEK, "next": NEXT_WEEK}
    assert out["warm"] == "true" and out["legs"] == LEG
    resolved = ws / "out" / "resolved.json"
    doc = json.loads(resolved.read_text())
    assert doc["now"] == WINDOW and doc["legs"][LEG]["version"] == NEXT_WEEK
    assert doc["warm_up"] == {
        "resolved_at": WARM_UP_AT,
        "run_url": "https://github.example/octo/llama/actions/runs/4242",
    }
    assert json.loads(out["resolved"]) == doc

    # The warm-up's leg job: compiles, makes no bundle, saves under a key of its own.
    warm_cache = tmp_path / "warm-ccache"
    warmed = build(ws, warm_cache, resolved)
    assert warmed["status"] == "warmed" and warmed["bundle"] is None
    assert warmed["toolchain"]["identity"] == f"rocm-{NEXT_WEEK}"
    assert warmed["ccache"]["misses"] == COMPILATIONS
    assert "bundle" not in warmed["phases"]
    warm_key, _ = key_of(ws, resolved)
    assert parse_key(warm_key).warm is True  # type: ignore[union-attr]
    assert warm_key.endswith("--b7-warm")

    # Sunday's first night resolves the new week's build: the warm-up's cache is under its restore prefix.
    night = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "resolve",
            "--now",
            SUNDAY_NIGHT,
            "--no-source",
            "--out",
            str(ws / "night"),
        ],
        check=True,
    )
    night_resolved = ws / "night" / "resolved.json"
    assert json.loads(night_resolved.read_text())["legs"][LEG]["version"] == NEXT_WEEK, night.stdout
    night_key, prefix = key_of(ws, night_resolved)
    assert warm_key.startswith(prefix) and night_key != warm_key
    night_cache = tmp_path / "night-ccache"
    shutil.copytree(warm_cache, night_cache)  # actions/cache restoring the warm-up's key by the prefix
    record = build(ws, night_cache, night_resolved)
    assert record["status"] == "success"
    assert record["ccache"]["hits"] == COMPILATIONS and record["ccache"]["misses"] == 0
    warmed_by = record["ccache"]["warmed_by"]
    assert warmed_by["run_url"] == "https://github.example/octo/llama/actions/runs/4242"
    assert warmed_by["toolchain"] == f"rocm-{NEXT_WEEK}" and warmed_by["window"] == WINDOW
    # Said once: the note is gone from the cache this night saves (tests/unit/test_warm_up_rules.py).
    assert not (night_cache / "pipeline-warmed-by.json").exists()


def test_a_saturday_build_published_after_the_warm_up_is_not_seen_by_it(
    http_server: LocalServer, therock: bytes, tmp_path: Path
) -> None:
    # Saturday's build came out at 20:00Z, after the 18:17Z warm-up: the warm-up compiles Friday's (the newest
    # it could see), and the week's first night, which sees Saturday's, will be cold: the one case the
    # warm-up cannot help (simulate counts these weeks).
    index_url = serve(http_server, therock, three_builds("2025-01-11T20:00:00Z"))
    ws = workspace(tmp_path, index_url)
    plan, _ = warm_up(ws, tmp_path)
    assert plan["builds"][LEG] == {"now": THIS_WEEK, "next": FRIDAY}


@pytest.mark.parametrize(
    ("policy", "warm", "reason"),
    [
        ("latest", True, "the ROCm policy 'latest' has no weekly window to warm ahead"),
        ("weekly-stable", False, "[rocm] warm_up is false"),
    ],
)
def test_nothing_to_warm_says_why_and_sets_warm_false(
    http_server: LocalServer, therock: bytes, tmp_path: Path, policy: str, warm: bool, reason: str
) -> None:
    index_url = serve(http_server, therock, {THIS_WEEK: "2025-01-04T03:00:00Z"})
    ws = workspace(tmp_path, index_url, policy=policy, warm_up=warm)
    plan, out = warm_up(ws, tmp_path)
    assert plan["warm"] is False and plan["legs"] == []
    assert reason in plan["reason"]
    assert out == {"warm": "false", "legs": ""}
    # No index was read, no resolution written.
    assert http_server.hits(INDEX) == 0
    assert not (ws / "out" / "resolved.json").exists()


def test_no_new_build_in_the_next_window_warms_nothing(
    http_server: LocalServer, therock: bytes, tmp_path: Path
) -> None:
    # Nothing was published this week: next week's first night takes this week's build, already warm.
    index_url = serve(http_server, therock, {THIS_WEEK: "2025-01-04T03:00:00Z"})
    ws = workspace(tmp_path, index_url)
    plan, out = warm_up(ws, tmp_path)
    assert plan["warm"] is False and plan["builds"][LEG] == {"now": THIS_WEEK, "next": THIS_WEEK}
    assert "no rocm leg's build changes" in plan["reason"]
    assert out["warm"] == "false"
