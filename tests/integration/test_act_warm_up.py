"""The Saturday warm-up under a real Actions runner (nektos/act): Saturday's night, Saturday's warm-up, then
Sunday's night, whose resolution moves to next week's TheRock build and finds it warm.

act runs the shipped ``nightly.yml`` and ``warm-up.yml`` here, offline, as
tests/integration/test_act_nightly.py does (tests/support/act.py: the pinned
actions, act's artifact and cache servers on 127.0.0.1, the fake GitHub). The
matrix is the shipped one with its ``rocm-linux-gfx110X`` leg alone, that leg's
shipped flags plus the one reduction (scripts/workload/reduction.py), its
``[rocm]`` table as shipped (``weekly-stable``, ``warm_up = true``) and TheRock's
index at a local HTTP server speaking TheRock's page format, which lists this
week's build (dated and published Saturday 2025-01-04), Friday's and next week's
(dated Saturday 2025-01-11, published that day at 03:00Z).

Not the real llama.cpp tree: its ggml-hip needs HIP, hipBLAS and rocBLAS to
configure (``find_package``) and ROCm's device libraries to compile for gfx1100,
and no TheRock stand-in this machine can make has them (Debian 12's clang 14 and
HIP 5.2 lack gfx1100 and rocBLAS; the sid root with ROCm 6.4 that
test_rocm_real_tree.py builds in is a chroot, not a runner act can start jobs
on). So the upstream is a generated project in a local git repository, tagged
``b<N>``: 40 C/C++ units in a library, and a ``llama-hipdemo`` program linking
the stand-in TheRock's runtime libraries (tests/support/runtime_libs.py: real
shared libraries shaped like libamdhip64, libhsa-runtime64 and librocblas, with
rocBLAS kernel files and their licenses), compiled by the TheRock tarball's
clang (Debian's, tests/support/rocm_leg.py). The shipped leg's flags reach its
CMake unused. With that toolchain the nightly's bundle passes check-bundle and
both nights publish, so the whole of both workflows runs.

The week, each run with its own run id and ``PIPELINE_NOW``, and the upstream
growing as the days pass:

1. Saturday 09:17Z, the nightly: this week's build, ``b<N>`` (Friday's tag);
   every job succeeds and ``b<N>`` is published with the ROCm bundle;
2. Saturday 18:17Z, ``warm-up.yml``: ``b<N+1>`` is out (Saturday afternoon); the
   plan resolves the next window (Sunday 00:00 in San Francisco, 08:00Z) to next
   week's build and names the leg; its job compiles ``b<N+1>`` with it, cold
   (nothing under that toolchain's prefix yet), records ``warmed`` and saves
   the cache under ``...--b<N+1>-warm`` in act's cache server;
3. Sunday 09:17Z, the nightly: ``b<N+2>`` came out at 01:00Z and changed one
   unit. The resolution moves to next week's build, the build restores the
   warm-up's cache by the restore prefix and misses that one unit only: at
   least 95% of its compilations hit, and its record names the warm-up's run in
   ``ccache.warmed_by``. ``b<N+2>`` is published, its bundle built by next
   week's toolchain.

act's cache server here is the test's own, empty at the start (the jobs' tool
cache is the machine's, tests/support/act.py): the fixed dates give every test
run the same toolchain keys, and a cache an earlier test run saved under them
would let the warm-up restore and the night hit without the chain under test.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tarfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from scripts.workload.reduction import is_reduced_from, reduce_targets, reduced_matrix
from tests.support.act import (
    ROOT,
    WARM_UP,
    WORKFLOW,
    ActRun,
    Runner,
    machine_state,
    runner_labels,
    workflow_files,
)
from tests.support.fake_github import FakeGitHub
from tests.support.gitrepos import commit_files, git, init_repo
from tests.support.httpserver import LocalServer
from tests.support.rocm_leg import FAMILY, INDEX, make_therock_with_runtime, serve_published, tarball_name
from tests.support.runtime_libs import EXPECTED_VERSION, write_hip_project

LEG = "rocm-linux-gfx110X"
pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.leg(LEG)]

REPO = "octo/llama"
TOKEN = "ghs_act_warm_up_0123456789abcdef"
THIS_WEEK = "7.0.0a20250104"
FRIDAY = "7.0.0a20250110"
NEXT_WEEK = "7.0.0a20250111"
PUBLISHED = {
    THIS_WEEK: "2025-01-04T03:00:00Z",
    FRIDAY: "2025-01-10T03:00:00Z",
    NEXT_WEEK: "2025-01-11T03:00:00Z",
}
SATURDAY_NIGHT = "2025-01-11T09:17:00Z"
WARM_UP_AT = "2025-01-11T18:17:00Z"
# The next window's start: Sunday 00:00 in San Francisco (PST, UTC-8).
WINDOW = "2025-01-12T08:00:00Z"
SUNDAY_NIGHT = "2025-01-12T09:17:00Z"
# Each tag's commit time: the nightly takes the newest tag at least [source] min_age_hours (6) old at its moment,
# the warm-up the one its window's first night would take of those that exist.
TAGGED = ("2025-01-10T20:00:00Z", "2025-01-11T14:00:00Z", "2025-01-12T01:00:00Z")
# Run ids: a run's artifacts sit under its id on act's artifact server.
SATURDAY_RUN, WARM_UP_RUN, SUNDAY_RUN = 201, 301, 202
NIGHTLY_JOBS = ("resolve", "build", "summary", "publish", "alert", "prune")
WARM_UP_JOBS = ("plan", "warm", "alert")
UNITS = 40
COMPILATIONS = UNITS + 1  # and the program's main.c
# The unit b<N+2> changes (a C++ one: the line it gains is C++).
CHANGED_UNIT = "src/unit001.cpp"
MIN_HIT_RATE = 0.95
WARM_RESTORE = "Restore ccache (an earlier warm-up of the same build)"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@dataclass
class Week:
    root: Path
    # b<N> (Saturday's night), b<N+1> (the warm-up's), b<N+2> (Sunday's night).
    tags: tuple[str, str, str]
    upstream: Path
    matrix: Path
    gh: FakeGitHub
    runner: Runner
    # TheRock's index and tarballs.
    index: LocalServer


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Week]:
    root = tmp_path_factory.mktemp("act-warm-up")
    therock = make_therock_with_runtime(root, root / "therock.tar.gz").read_bytes()
    with (
        machine_state(root / "machine") as shared,
        FakeGitHub(repo=REPO, token=TOKEN) as gh,
        LocalServer() as index,
    ):
        state = dataclasses.replace(shared, cache_server=root / "cache-server")
        n = state.first_build
        upstream = init_repo(root / "forge" / "upstream")
        write_hip_project(upstream, units=UNITS)
        git(upstream, "add", ".")
        matrix = root / "matrix.toml"
        matrix.write_text(
            reduced_matrix((ROOT / "matrix.toml").read_text(encoding="utf-8"), legs=[LEG],
                           source_repo=str(upstream)),
            encoding="utf-8",
        )  # fmt: skip
        index_url = serve_published(index, therock, {v: at(when) for v, when in PUBLISHED.items()})
        runner = Runner(
            root=root / "act",
            repo=REPO,
            token=TOKEN,
            env={
                "PIPELINE_MATRIX": str(matrix),
                "GITHUB_API_URL": gh.api_url,
                "PIPELINE_HTTP_BACKOFF": "0.1",
                "PIPELINE_ROCM_INDEX_URL": index_url,
            },
            labels=runner_labels(workflow_files(), [_leg_runner(matrix)]),
            state=state,
        )
        yield Week(root=root, tags=(f"b{n}", f"b{n + 1}", f"b{n + 2}"), upstream=upstream, matrix=matrix, gh=gh,
                   runner=runner, index=index)  # fmt: skip
    times = ", ".join(f"{r.log_path.stem} {r.seconds:.0f} s" for r in runner.runs)
    print(f"\nact week: {times}; total {sum(r.seconds for r in runner.runs):.0f} s; logs in {runner.logs}")


def _leg_runner(matrix: Path) -> str:
    return str(tomllib.loads(matrix.read_text(encoding="utf-8"))["legs"][LEG]["runner"])


def _tag(week: Week, number: int) -> str:
    """Tag ``tags[number]`` at its time: the first commits the project, the third changes one unit."""
    tag = week.tags[number]
    when = at(TAGGED[number])
    if number == 2:
        source = week.upstream / CHANGED_UNIT
        changed = source.read_text() + f"namespace {{ [[maybe_unused]] const int act_{tag} = 1; }}\n"
        commit_files(week.upstream, {CHANGED_UNIT: changed}, f"{tag}: a line of {CHANGED_UNIT}", when=when)
    else:
        commit_files(week.upstream, {"docs/notes.md": f"- {tag}\n"}, f"{tag}: notes", when=when)
    git(week.upstream, "tag", tag)
    return tag


def _run(week: Week, name: str, *, run_id: int, now: str, workflow: Path = WORKFLOW) -> ActRun:
    """One scheduled run of ``workflow`` at the moment ``now`` (the jobs' PIPELINE_NOW)."""
    return week.runner.run(name, run_id=run_id, extra_env={"PIPELINE_NOW": now}, workflow=workflow)


@pytest.fixture(scope="module")
def saturday_night(week: Week) -> ActRun:
    _tag(week, 0)
    return _run(week, "saturday-night", run_id=SATURDAY_RUN, now=SATURDAY_NIGHT)


@pytest.fixture(scope="module")
def warm_up(week: Week, saturday_night: ActRun) -> ActRun:
    _tag(week, 1)
    return _run(week, "saturday-warm-up", run_id=WARM_UP_RUN, now=WARM_UP_AT, workflow=WARM_UP)


@pytest.fixture(scope="module")
def sunday_night(week: Week, warm_up: ActRun) -> ActRun:
    _tag(week, 2)
    return _run(week, "sunday-night", run_id=SUNDAY_RUN, now=SUNDAY_NIGHT)


def record_of(week: Week, run_id: int, member: str = "record.json") -> Any:
    data = week.runner.artifact_file(run_id, f"record-{LEG}", member)
    return json.loads(data) if member.endswith(".json") else data.decode()


def expect_jobs_succeed(run: ActRun, jobs: tuple[str, ...]) -> None:
    assert run.job_results() == dict.fromkeys(jobs, "success"), run.failures()
    assert run.returncode == 0, run.failures()


def published(gh: FakeGitHub, tag: str) -> list[dict[str, Any]]:
    return [r for r in gh.releases if r["tag_name"] == tag and not r["draft"]]


def bundle_name(tag: str) -> str:
    return f"llama-{tag}-bin-ubuntu-rocm-{FAMILY}-x64.tar.gz"


def restored_key(run: ActRun, job: str, step: str) -> str | None:
    """The key actions/cache restored ``step``'s cache from (None: nothing), from the step's own line, in lower
    case: act's cache server keeps keys so (nektos/act#2497; GitHub keeps their case and matches them ignoring it).
    """
    found = re.search(r"Cache restored from key: (\S+)", run.output(job, step))
    return found.group(1).lower() if found else None


def downloads(week: Week, version: str) -> int:
    """How many times the runners downloaded ``version``'s TheRock tarball."""
    return week.index.hits(INDEX + tarball_name("linux", FAMILY, version))


def missed_units(log: str) -> list[str]:
    """The sources whose compilation missed, from ccache's per-call log (``# <source>``, then its counters)."""
    missed, source = [], None
    for line in log.splitlines():
        if line.startswith("# "):
            source = line[2:]
        elif line == "cache_miss" and source is not None:
            missed.append(source)
    return missed


# -- the shipped configuration is what runs


def test_the_tested_leg_is_the_shipped_rocm_leg_plus_the_reduction(week: Week) -> None:
    shipped = tomllib.loads((ROOT / "matrix.toml").read_text(encoding="utf-8"))
    tested = tomllib.loads(week.matrix.read_text(encoding="utf-8"))
    assert list(tested["legs"]) == [LEG]
    leg = shipped["legs"][LEG]
    assert is_reduced_from(tested["legs"][LEG]["cmake_args"], leg["cmake_args"])
    assert tested["legs"][LEG]["targets"] == reduce_targets("rocm", leg["targets"])
    # The warm-up is on as shipped, under the shipped weekly policy; only the index comes from the test.
    assert tested["rocm"] == shipped["rocm"] and tested["rocm"]["warm_up"] is True
    assert tested["ccache"] == shipped["ccache"]


# -- Saturday


def test_saturdays_night_builds_this_weeks_rocm_build_and_publishes(
    week: Week, saturday_night: ActRun
) -> None:
    expect_jobs_succeed(saturday_night, NIGHTLY_JOBS)
    record = record_of(week, SATURDAY_RUN)
    assert record["status"] == "success" and record["source"]["tag"] == week.tags[0], record["status"]
    assert record["toolchain"]["identity"] == f"rocm-{THIS_WEEK}"
    (release,) = published(week.gh, week.tags[0])
    assert bundle_name(week.tags[0]) in [a["name"] for a in release["assets"]]


def test_saturdays_warm_up_compiles_next_weeks_build_and_saves_the_warm_cache(
    week: Week, warm_up: ActRun
) -> None:
    expect_jobs_succeed(warm_up, WARM_UP_JOBS)
    plan = warm_up.output("plan", "Resolve next week's ROCm builds")
    assert re.search(rf"{LEG}\s+{re.escape(THIS_WEEK)} -> {re.escape(NEXT_WEEK)}\s+warm", plan), plan
    record = record_of(week, WARM_UP_RUN)
    # Compiled, no bundle: the warm-up's record, with next week's toolchain and the tag the window will build.
    assert record["status"] == "warmed" and record["bundle"] is None, record["status"]
    assert record["toolchain"]["identity"] == f"rocm-{NEXT_WEEK}"
    assert record["source"]["tag"] == week.tags[1]
    # Cold: nothing under next week's restore prefix before this run.
    assert restored_key(warm_up, "warm", WARM_RESTORE) is None, warm_up.excerpt("Cache", job="warm")
    assert (record["ccache"]["hits"], record["ccache"]["misses"]) == (0, COMPILATIONS), record["ccache"]
    # act's cache server took the cache under the warm key (actions/cache/save's own line).
    key = f"llama-ccache--{LEG}--rocm-{NEXT_WEEK}--{week.tags[1]}-warm"
    assert f"Cache saved with key: {key}" in warm_up.output("warm", "Save ccache"), warm_up.excerpt(
        "Save", job="warm"
    )
    # ... and keeps it: act's cache server stores each entry's key, in lower case, in its bolt.db.
    assert key.lower().encode() in (week.runner.caches / "bolt.db").read_bytes()
    # It downloaded next week's build once, and cached the archive for the night (its own key, exact).
    assert downloads(week, NEXT_WEEK) == 1
    toolchain_key = f"llama-toolchain--{LEG}--rocm-{NEXT_WEEK}"
    assert f"Cache saved with key: {toolchain_key}" in warm_up.output("warm"), warm_up.excerpt(
        "toolchain", job="warm"
    )
    # A warm-up publishes nothing, and its success leaves no warm-up-failure issue.
    assert published(week.gh, week.tags[1]) == []
    assert not [i for i in week.gh.issues if "warm-up-failure" in {lb["name"] for lb in i["labels"]}]
    # Its alert job speaks of the warm-up (it said "nightly success" before alert's line took --run-name).
    assert "warm-up success: no open 'warm-up-failure' issue, nothing to do" in warm_up.output("alert")


# -- Sunday


def test_sundays_night_moves_to_next_weeks_build_and_hits_the_warm_cache(
    week: Week, warm_up: ActRun, sunday_night: ActRun
) -> None:
    expect_jobs_succeed(sunday_night, NIGHTLY_JOBS)
    record = record_of(week, SUNDAY_RUN)
    assert record["status"] == "success" and record["source"]["tag"] == week.tags[2], record["status"]
    assert record["toolchain"]["identity"] == f"rocm-{NEXT_WEEK}"
    # The warm-up's cache, found by the night's restore prefix (the key is the warm-up's, not the night's).
    warm_key = f"llama-ccache--{LEG}--rocm-{NEXT_WEEK}--{week.tags[1]}-warm"
    assert restored_key(sunday_night, "build", "Restore ccache") == warm_key.lower(), sunday_night.excerpt(
        "Cache", job="build"
    )
    ccache = record["ccache"]
    rate = ccache["hits"] / (ccache["hits"] + ccache["misses"])
    said = f"{ccache['hits']} hits, {ccache['misses']} misses ({rate:.1%})"
    print(f"\nSunday's {LEG}: {said} from the warm-up's cache")
    assert rate >= MIN_HIT_RATE, said
    # The misses are the unit b<N+2> changed and nothing else: every other compilation came from the warm-up.
    assert missed_units(record_of(week, SUNDAY_RUN, "ccache-stats.log")) == [
        f"../src/llama.cpp/{CHANGED_UNIT}"
    ], said
    assert (ccache["hits"], ccache["misses"]) == (COMPILATIONS - 1, 1), said
    warmed_by = ccache["warmed_by"]
    assert warmed_by["run_url"].endswith(f"/{REPO}/actions/runs/{WARM_UP_RUN}"), warmed_by
    assert warmed_by["resolved_at"] == WARM_UP_AT and warmed_by["window"] == WINDOW, warmed_by
    assert (warmed_by["toolchain"], warmed_by["tag"]) == (f"rocm-{NEXT_WEEK}", week.tags[1]), warmed_by
    # The first night of the week downloads nothing: the archive came from the warm-up's cache too.
    toolchain_step = "Cache the downloaded toolchain (one download per resolved version)"
    assert (
        restored_key(sunday_night, "build", toolchain_step)
        == f"llama-toolchain--{LEG}--rocm-{NEXT_WEEK}".lower()
    )
    assert downloads(week, NEXT_WEEK) == 1


def test_sundays_night_publishes_a_bundle_of_next_weeks_build(
    week: Week, sunday_night: ActRun, tmp_path: Path
) -> None:
    tag = week.tags[2]
    (release,) = published(week.gh, tag)
    asset = next(a for a in release["assets"] if a["name"] == bundle_name(tag))
    bundle = tmp_path / asset["name"]
    bundle.write_bytes(week.gh.asset_bytes[asset["id"]])
    with tarfile.open(bundle) as tar:
        manifest = json.loads(tar.extractfile(f"llama-{tag}/manifest.json").read())  # type: ignore[union-attr]
        names = set(tar.getnames())
    # The stand-in TheRock's runtime, from next week's build, and the program that links it.
    assert {f"llama-{tag}/llama-hipdemo", f"llama-{tag}/libamdhip64.so.7.1.0"} <= names
    assert any(f.get("from_toolchain") == "lib/librocblas.so.4.5.0" for f in manifest["files"])
    smoke = record_of(week, SUNDAY_RUN)["bundle_check"]["smoke"]
    assert [(r["program"], r["exit_code"], r["output"]) for r in smoke] == [
        ("llama-hipdemo", 0, EXPECTED_VERSION)
    ]
