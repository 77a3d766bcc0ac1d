"""The shipped nightly.yml, run whole by a real Actions runner (nektos/act), night after night.

act runs the workflow's jobs on this machine in self-hosted mode, offline,
with the pinned actions from the shared folder and its artifact and cache
servers on 127.0.0.1 (tests/support/act.py). Stand-ins on 127.0.0.1: the
llama.cpp "upstream" (a local git repository of the real tree, llama-cpp-python
0.3.36's vendored copy, tagged ``b<N>``, one commit per later tag)
and the fake GitHub (releases and their uploads host, issues, Actions caches).

The run is the shipped one: the shipped matrix.toml with its cpu leg only
(every scheduled night builds every leg of the matrix), its source pointed at
the local upstream, and the cpu leg's shipped flags followed by the one CI
reduction of scripts/workload/reduction.py, whose shared units come in as a
read-only ``[ccache] remote``: the objects the real-tree cpu test compiled
(tests/support/shared_units.py), so that a cold machine compiles those units
once, not twice. Night 2 must still hit every unit in the cache it restored.

The nights, each a scheduled run with its own run id and a fresh runner home:

1. ``b<N>``: resolve, build, summary, publish, alert and prune succeed; one
   published release with the bundle and a correct SHA256SUMS; the (closed)
   alert issue stays closed;
2. ``b<N+1>`` (a line of libllama changed, so the night compiles something new)
   on a runner whose linker refuses ``libllama`` (a fault injected with
   ``LDFLAGS=-B<folder>``: a linker-only flag, so every compile command and
   ccache's hashes are as on a good runner): ccache comes back from act's cache
   server; no release, the ccache save step still runs, the alert issue opens
   naming the leg; then the failed run is run again (same run id, attempt 2,
   its artifacts still on the artifact server) on the repaired runner: it
   restores what the failed attempt saved, completes and publishes. Between
   the two attempts, exactly the two units the new tag changed miss, each
   once: every other compilation hits.

``N`` is new on every test run (tests/support/act.py, ``machine_state``): act's
cache server keeps its folder in the machine's test cache, so a second test run
restores the first one's ccache by the restore prefix, as a next night would,
and never meets a key it wrote before.

Finally the published programs must print the tag's build number and
llama.cpp's commit. The nights run lazily (a fixture each, night 2's needing
night 1's): ``-k night_1`` runs one night only. The sdist, act's cache server
and the tool cache's virtualenv stay in the test cache (``PIPELINE_TEST_CACHE``).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scripts.workload.reduction import PROGRAM, is_reduced_from, reduced_matrix
from tests.support.act import (
    ROOT,
    ActRun,
    Runner,
    Upstream,
    machine_state,
    make_upstream,
    runner_labels,
    workflow_files,
)
from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import run_pipeline
from tests.support.shared_units import WRITER, read_only, shared_units, wait_for_the_writer, xdist_run

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.leg("cpu")]

REPO = "octo/llama"
TOKEN = "ghs_act_nightly_0123456789abcdef"
LEG = "cpu"
ALERT_LABEL = "nightly-failure"
JOBS = ("resolve", "build", "summary", "publish", "alert", "prune")
# The runner fault of night 3: a linker (found first through gcc's -B) that refuses to link libllama.
FAULTY_LD = """#!/bin/sh
# The act test's broken runner: this linker hangs a while, then refuses libllama (a linker-only
# fault: every compile command, and so every ccache hash, is the same as on a good runner). The
# hang is a step that finishes nothing for longer than the runner's heartbeat interval.
for arg in "$@"; do
    case "$arg" in
        *libllama.so*) sleep 4; echo "act-test-fault: this runner's linker refuses $arg" >&2; exit 1 ;;
    esac
done
exec /usr/bin/ld "$@"
"""


@dataclass
class Nights:
    root: Path
    # Night n builds tags[n - 1]: b<N> (the real tree), b<N+1> (a line of libllama).
    tags: tuple[str, str]
    upstream: Upstream
    matrix: Path
    gh: FakeGitHub
    runner: Runner
    # The alert issue a past failure left, closed since.
    old_alert: int
    runs: dict[str, ActRun] = field(default_factory=dict)
    # Artifact names on the artifact server for night 2's run id, before its re-run.
    artifacts_before_rerun: list[str] = field(default_factory=list)
    # The units night 2's failed attempt compiled and missed (ccache's log in its record), before the re-run.
    missed_before_rerun: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nights]:
    root = tmp_path_factory.mktemp("act-nightly")
    with machine_state(root / "machine") as state, FakeGitHub(repo=REPO, token=TOKEN) as gh:
        n = state.first_build
        tags = (f"b{n}", f"b{n + 1}")
        upstream = make_upstream(root / "forge", base_tag=tags[0])
        matrix = root / "matrix.toml"
        shipped = (ROOT / "matrix.toml").read_text(encoding="utf-8")
        matrix.write_text(
            reduced_matrix(
                shipped,
                legs=[LEG],
                source_repo=str(upstream.path),
                shared_units=read_only(shared_units().url),
            ),
            encoding="utf-8",
        )
        old_alert = gh.add_issue("Nightly build failing", [ALERT_LABEL], state="closed")
        runner = Runner(
            root=root / "act",
            repo=REPO,
            token=TOKEN,
            env={
                "PIPELINE_MATRIX": str(matrix),
                "GITHUB_API_URL": gh.api_url,
                "PIPELINE_HTTP_BACKOFF": "0.1",
                # No ROCm leg runs: any look at TheRock's index would be a bug, refused at once here.
                "PIPELINE_ROCM_INDEX_URL": "http://127.0.0.1:9/",
                # The runner's heartbeat setting: a line after 1 s without a finished step (the
                # shipped 60 s would need a minute-long step; night 2's hanging linker takes 4 s).
                "PIPELINE_HEARTBEAT": "1",
            },
            labels=runner_labels(workflow_files(), [_leg_runner(matrix)]),
            state=state,
        )
        yield Nights(
            root=root, tags=tags, upstream=upstream, matrix=matrix, gh=gh, runner=runner, old_alert=old_alert
        )
    total = sum(run.seconds for run in runner.runs)
    times = ", ".join(f"{r.log_path.stem} {r.seconds:.0f} s" for r in runner.runs)
    print(f"\nact nights: {times}; total {total:.0f} s; logs in {runner.logs}")


def _leg_runner(matrix: Path) -> str:
    import tomllib

    return str(tomllib.loads(matrix.read_text(encoding="utf-8"))["legs"][LEG]["runner"])


def _night(nights: Nights, number: int, **kwargs: Any) -> ActRun:
    tag = nights.tags[number - 1]
    if tag not in nights.upstream.tags:
        # A day old: `latest` with the shipped min_age_hours takes it.
        when = datetime.now(UTC) - timedelta(days=1, hours=-number)
        nights.upstream.add_tag(tag, when=when, compiled=number == 2)
    name = f"night{number}-{tag}" + (f"-attempt{kwargs['attempt']}" if kwargs.get("attempt", 1) > 1 else "")
    run = nights.runner.run(name, run_id=100 + number, **kwargs)
    nights.runs[name] = run
    return run


@pytest.fixture(scope="module")
def night1(nights: Nights, request: pytest.FixtureRequest) -> ActRun:
    # On a cold machine, the units come from the cpu leg's build running beside this file: wait for it rather
    # than compile the same units at the same time (tests/support/shared_units.py).
    writer = any(item.nodeid.startswith(WRITER) for item in request.session.items)
    waited = wait_for_the_writer(xdist_run(request.config), writer)
    if waited:
        print(f"\nact nights: waited {waited:.0f} s for the shared units", flush=True)
    return _night(nights, 1)


@pytest.fixture(scope="module")
def night2(nights: Nights, night1: ActRun) -> ActRun:
    fault = nights.root / "broken-linker"
    fault.mkdir(exist_ok=True)
    (fault / "ld").write_text(FAULTY_LD)
    (fault / "ld").chmod(0o755)
    return _night(nights, 2, extra_env={"LDFLAGS": f"-B{fault}/"})


@pytest.fixture(scope="module")
def night2_rerun(nights: Nights, night2: ActRun) -> ActRun:
    nights.artifacts_before_rerun = artifact_names(nights, 102)
    if f"record-{LEG}" in nights.artifacts_before_rerun:
        nights.missed_before_rerun = missed_units(nights, 102)
    return _night(nights, 2, attempt=2)


# -- what a release engineer looks at


def artifact_names(nights: Nights, run_id: int) -> list[str]:
    return nights.runner.artifact_names(run_id)


def artifact_file(nights: Nights, run_id: int, artifact: str, member: str) -> bytes:
    return nights.runner.artifact_file(run_id, artifact, member)


def record_of(nights: Nights, run_id: int) -> dict[str, Any]:
    return json.loads(artifact_file(nights, run_id, f"record-{LEG}", "record.json"))  # type: ignore[no-any-return]


def _record_or_empty(nights: Nights, run: ActRun) -> dict[str, Any]:
    try:
        return record_of(nights, run.run_id)
    except AssertionError:
        return {}


def published(gh: FakeGitHub, tag: str) -> list[dict[str, Any]]:
    return [r for r in gh.releases if r["tag_name"] == tag and not r["draft"]]


def asset_bytes(gh: FakeGitHub, release: dict[str, Any], name: str) -> bytes:
    asset = next(a for a in release["assets"] if a["name"] == name)
    return gh.asset_bytes[asset["id"]]


def alert_issues(gh: FakeGitHub) -> list[dict[str, Any]]:
    return [i for i in gh.issues if ALERT_LABEL in [label["name"] for label in i["labels"]]]


def jobs_report(nights: Nights, run: ActRun) -> str:
    """What a reader of the run's page sees first: each job's result, the failed steps' last lines, the record."""
    lines = [run.failures()]
    record = _record_or_empty(nights, run)
    if record.get("status") not in (None, "success"):
        check = record.get("bundle_check") or {}
        lines += [f"--- record-{LEG}: {record.get('status')}",
                  *(f"check-bundle: {p.get('file')}: {p.get('message')}" for p in check.get("problems", []))]  # fmt: skip
    return "\n".join(lines)


def expect_all_jobs_succeed(nights: Nights, run: ActRun) -> None:
    assert run.job_results() == dict.fromkeys(JOBS, "success"), jobs_report(nights, run)
    assert run.returncode == 0, jobs_report(nights, run)


# -- the shipped configuration is what runs


def test_the_tested_leg_is_the_shipped_leg_plus_the_reduction(nights: Nights) -> None:
    import tomllib

    shipped = tomllib.loads((ROOT / "matrix.toml").read_text(encoding="utf-8"))
    tested = tomllib.loads(nights.matrix.read_text(encoding="utf-8"))
    assert list(tested["legs"]) == [LEG]
    assert is_reduced_from(tested["legs"][LEG]["cmake_args"], shipped["legs"][LEG]["cmake_args"])
    assert tested["cmake"] == shipped["cmake"]
    # The shipped [ccache] table, plus the shared units read-only (the reduction's shared units).
    assert tested["ccache"] == {**shipped["ccache"], "remote": f"{shared_units().url}|read-only"}


# -- night 1: a scheduled night from a cold machine


def test_night_1_every_job_succeeds(nights: Nights, night1: ActRun) -> None:
    # A pipeline defect this caught: check-bundle refused libssl.so.3, which libllama-common links on a
    # runner with libssl-dev (the shipped cpu flags leave LLAMA_OPENSSL on), and the build step failed.
    expect_all_jobs_succeed(nights, night1)
    # Each job installed into its own Python, the tool cache's that setup-python named: uv says where.
    # A defect this caught: uv took the UV_PYTHON of the Nox session the test ran in, installed there,
    # and only a tool cache left with nox by an earlier run hid the jobs' "nox: command not found".
    for job in JOBS:
        places = set(re.findall(r"environment at: ([^\s\x1b]+)", night1.output(job)))
        assert places == {str(nights.runner.python)}, f"{job}: {places}\n{jobs_report(nights, night1)}"


def test_night_1_publishes_one_release_with_the_bundle_its_sbom_and_correct_checksums(
    nights: Nights, night1: ActRun, tmp_path: Path
) -> None:
    tag = nights.tags[0]
    releases = published(nights.gh, tag)
    assert len(releases) == 1, f"published releases for {tag}: {len(releases)}\n{jobs_report(nights, night1)}"
    release = releases[0]
    bundle = f"llama-{tag}-bin-ubuntu-x64.tar.gz"
    sbom = f"{bundle}.cdx.json"
    # The release carries the source its bundle was built from, as the release job's does.
    source = f"llama.cpp-source-{tag}.tar.gz"
    assert sorted(a["name"] for a in release["assets"]) == sorted([bundle, sbom, source, "SHA256SUMS"])
    sums = asset_bytes(nights.gh, release, "SHA256SUMS").decode()
    digests = {
        name: hashlib.sha256(asset_bytes(nights.gh, release, name)).hexdigest()
        for name in (bundle, sbom, source)
    }
    assert sums == "".join(f"{digests[name]}  {name}\n" for name in sorted(digests))
    assert all(a["state"] == "uploaded" for a in release["assets"])
    assert len([r for r in nights.gh.releases if r["tag_name"] == tag]) == 1  # no draft left beside it
    # What a user downloads verifies: every file of the bundle against the SBOM, the archive against SHA256SUMS.
    for name in (bundle, sbom, "SHA256SUMS"):
        (tmp_path / name).write_bytes(asset_bytes(nights.gh, release, name))
    proc = run_pipeline(
        [
            "verify",
            str(tmp_path / bundle),
            "--sums",
            str(tmp_path / "SHA256SUMS"),
            "--sbom",
            str(tmp_path / sbom),
        ],
        env={},
    )
    assert proc.returncode == 0 and ": verified: " in proc.stdout, proc.stdout + proc.stderr
    # The provenance step needs GitHub's OIDC token: act skips it (its Main stage never starts), and the
    # log names the step with the reason. act still resolves the action: the test's stand-in, which refuses to run.
    steps = {e.get("step") for e in night1.entries if e.get("jobID") == "publish"}
    attest = [s for s in steps if isinstance(s, str) and s.startswith("Attest the bundles")]
    assert attest and "skipped under act" in attest[0] and "OIDC" in attest[0], sorted(map(str, steps))
    assert not [e for e in night1.entries if e.get("step") == attest[0] and e.get("stage") == "Main"]
    assert "act stand-in of attest-build-provenance ran" not in night1.output("publish")


def test_night_1_leaves_the_alert_issue_closed(nights: Nights, night1: ActRun) -> None:
    assert night1.step_results("alert").get("Open, update or close the alert issue") == "success"
    # No ROCm leg in this run: nothing stale, no rocm-stale issue (tests/integration/test_rocm_alert_api.py).
    assert night1.step_results("alert").get("Name each stale ROCm family in its issue") == "success"
    assert not [i for i in nights.gh.issues if "rocm-stale" in {lb["name"] for lb in i["labels"]}]
    issues = alert_issues(nights.gh)
    # Fails when night 1's build fails (check-bundle refusing libssl.so.3 did): the alert then rightly opens an issue.
    assert [(i["number"], i["state"]) for i in issues] == [(nights.old_alert, "closed")], (
        f"{night1.tail('alert', 8)}\n{jobs_report(nights, night1)}"
    )


def test_night_1_build_log_has_progress_lines_unwrapped(nights: Nights, night1: ActRun) -> None:
    """The log a reader opens: progress lines at every tenth, no live bar, no line cut at 80 columns.

    The workflow sets FORCE_COLOR: colours (SGR codes, which GitHub renders) are welcome; anything else
    a terminal would read (cursor moves, carriage returns, a hidden cursor) is a live bar in the log.
    """
    raw = night1.output("build", "Build")
    assert "\r" not in raw and not re.search(r"\x1b\[(?![0-9;]*m)", raw), (
        "a live bar (terminal control codes) in the log"
    )
    log = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    progress = re.findall(rf"(?m)^{LEG}: \[(\d+)/(\d+)\] ", log)
    assert len(progress) >= 5, night1.tail("build", 40)
    # The longest line the build prints names the ccache folder in full, on one line.
    cache = str(nights.runner.runner_home / "ccache" / LEG)
    assert re.search(rf"(?m)^{LEG}: gcc-.*cache {re.escape(cache)}\)$", log), night1.excerpt(
        "ccache", job="build"
    )


# -- night 2: a new line of libllama on a broken runner, then the failed run run again


def missed_units(nights: Nights, run_id: int) -> list[str]:
    """The sources whose compilation missed in a run's build, from ccache's own per-call log.

    The build job uploads it with the record; ccache writes one ``# <source>`` line per call, then
    that call's counters (``cache_miss``, ...).
    """
    missed, source = [], None
    for line in artifact_file(nights, run_id, f"record-{LEG}", "ccache-stats.log").decode().splitlines():
        if line.startswith("# "):
            source = line[2:]
        elif line == "cache_miss" and source is not None:
            missed.append(source)
    return missed


def test_night_2_a_silent_step_shows_heartbeats_in_the_log(nights: Nights, night2: ActRun) -> None:
    """While no step finishes (the broken linker hangs), the log says the build is alive."""
    log = re.sub(r"\x1b\[[0-9;]*m", "", night2.output("build", "Build"))
    beats = re.findall(rf"(?m)^{LEG}: \[\d+/\d+\] still building, .* elapsed$", log)
    assert beats, night2.tail("build", 40)


def test_night_2_a_failed_build_publishes_nothing_but_saves_its_cache_and_opens_the_alert(
    nights: Nights, night2: ActRun
) -> None:
    assert night2.job_results().get("build") == "failure", jobs_report(nights, night2)
    steps = night2.step_results("build")
    assert steps.get("Build") == "failure", steps
    assert "act-test-fault: this runner's linker refuses" in night2.output("build")
    # The long compile is kept for the next night (or the re-run).
    assert steps.get("Save ccache") == "success", (steps, night2.excerpt("save", job="build"))
    assert published(nights.gh, nights.tags[1]) == []
    issues = [i for i in alert_issues(nights.gh) if i["state"] == "open"]
    assert len(issues) == 1, [(i["number"], i["state"]) for i in alert_issues(nights.gh)]
    # Opened by this night, or (when an earlier night failed too) commented on: the last word is this night's.
    said = [issues[0]["body"], *issues[0].get("comments", [])][-1]
    assert f"- `{LEG}`: the build failed" in said and f"`{nights.tags[1]}`" in said, said


def test_night_2_rerun_of_the_failed_run_publishes_and_closes_the_alert(
    nights: Nights, night2: ActRun, night2_rerun: ActRun
) -> None:
    # The first attempt's artifacts were still there, and the re-run uploaded over them.
    assert {"source", f"record-{LEG}"} <= set(nights.artifacts_before_rerun), nights.artifacts_before_rerun
    expect_all_jobs_succeed(nights, night2_rerun)
    assert len(published(nights.gh, nights.tags[1])) == 1
    assert record_of(nights, 102)["status"] == "success"
    assert [i["state"] for i in alert_issues(nights.gh) if i["number"] != nights.old_alert] == ["closed"]


def test_night_2_restores_ccache_from_the_cache_server_and_misses_only_what_the_tag_changed(
    nights: Nights, night1: ActRun, night2: ActRun, night2_rerun: ActRun
) -> None:
    """Both attempts restore from act's cache server, and between them exactly two units miss, once each.

    The tag changed two compiled files: a line of ``src/llama.cpp``, and llama.cpp's generated
    ``common/build-info.cpp``, whose text carries the build number and commit the programs print
    (the run's tag and commit): it is a unit every new tag compiles, by design. The failed attempt
    compiles ``src/llama.cpp`` (libllama's link is what fails) and whatever else ran before Ninja
    stopped; the re-run restores what the failed attempt saved. Every other compilation of either
    attempt hits. (With the tree extracted into a folder named after its tag, every unit missed.)
    """
    tag = int(nights.tags[1].removeprefix("b"))
    for attempt in (night2, night2_rerun):
        restore = attempt.output("build", "Restore ccache")
        restored = re.search(rf"Cache restored from key: (llama-ccache--{LEG}--[\w.-]+--b(\d+))$", restore,
                             re.MULTILINE)  # fmt: skip
        assert restored, attempt.excerpt("ache", job="build")
        # The failed attempt: night 1's cache, or on a warm machine the newest an earlier test run saved (by
        # the restore prefix). The re-run: the failed attempt's own save, under this tag's key.
        number = int(restored.group(2))
        assert number < tag if attempt is night2 else number == tag, (
            attempt.log_path.stem,
            restored.group(1),
        )
    ccache = record_of(nights, 102)["ccache"]
    first, second = nights.missed_before_rerun, missed_units(nights, 102)
    said = f"missed: {first} in the failed attempt, {second} in the re-run ({ccache['hits']} hits)"
    # ccache names each unit as the compile command does, from the build folder (the tree is ../src/llama.cpp).
    assert "../src/llama.cpp/src/llama.cpp" in first, said
    assert sorted(first + second) == ["../src/llama.cpp/src/llama.cpp", "common/build-info.cpp"], said
    assert ccache["misses"] == len(second) and ccache["hits"] > 100, said
    # Every hit from the restored cache: none from the shared units (read-only, tests/support/shared_units.py).
    assert ccache["remote_hits"] == 0, said


# -- what the published programs say about themselves


def _version_of_published(nights: Nights, tag: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    releases = published(nights.gh, tag)
    if not releases:
        # What check-bundle's smoke run saw, from the records of the runs that built the tag.
        seen = [
            (run.log_path.stem, smoke.get("output"))
            for run in nights.runner.runs
            if tag in run.log_path.stem
            for smoke in _record_or_empty(nights, run).get("bundle_check", {}).get("smoke", [])
        ]
        raise AssertionError(f"no published release for {tag}; check-bundle's smoke runs printed: {seen}")
    bundle = f"llama-{tag}-bin-ubuntu-x64.tar.gz"
    dest = tmp_path / tag
    dest.mkdir()
    with tarfile.open(fileobj=io.BytesIO(asset_bytes(nights.gh, releases[0], bundle))) as tar:
        tar.extractall(dest, filter="tar")
    programs = sorted(dest.rglob(Path(PROGRAM).name))
    assert len(programs) == 1, sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*"))
    return subprocess.run([str(programs[0]), "--version"], cwd=tmp_path, env=_empty_env(tmp_path),
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def _empty_env(tmp_path: Path) -> dict[str, str]:
    """An empty environment, outside any git repository: what a user who downloaded the bundle has."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "LC_ALL": "C",
        "GIT_CEILING_DIRECTORIES": "/",
    }


def test_the_published_bundle_computes_on_the_cpu_device(
    nights: Nights, night1: ActRun, tmp_path: Path
) -> None:
    """Night 1's published bundle, extracted in an empty environment: ggml loads its CPU backend from the
    bundle and a tiny random-weight model generates tokens on it (llama-simple, a program it ships)."""
    from pipeline.bundle.tiny_model import write_tiny_llama

    tag = nights.tags[0]
    releases = published(nights.gh, tag)
    assert releases, f"no published release for {tag}"
    dest = tmp_path / "bundle"
    dest.mkdir()
    with tarfile.open(
        fileobj=io.BytesIO(asset_bytes(nights.gh, releases[0], f"llama-{tag}-bin-ubuntu-x64.tar.gz"))
    ) as tar:
        tar.extractall(dest, filter="tar")
    (simple,) = dest.glob("llama-*/llama-simple")
    model = write_tiny_llama(tmp_path / "tiny.gguf")
    # A random-weight model's tokens are any bytes (its vocab has byte tokens): not always UTF-8.
    proc = subprocess.run([str(simple), "-m", str(model), "-n", "2", "Hello"], cwd=tmp_path, env=_empty_env(tmp_path),
                          capture_output=True, text=True, errors="replace", timeout=120, check=False)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # ggml's own log line for a backend module it loaded, from the bundle's folder (GGML_BACKEND_DL).
    assert re.search(rf"loaded CPU backend from {re.escape(str(simple.parent))}/libggml-cpu\.so", out), out
    assert re.search(r"decoded [12] tokens", out), out


@pytest.mark.parametrize("night", [1, 2])
def test_published_programs_print_the_tags_build_number_and_llama_cpps_commit(
    nights: Nights, night1: ActRun, night2_rerun: ActRun, night: int, tmp_path: Path
) -> None:
    tag = nights.tags[night - 1]
    proc = _version_of_published(nights, tag, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    commit = nights.upstream.tags[tag][:7]
    # A pipeline defect this caught: llama.cpp's build-info.cmake asks git in the source folder, which
    # the workflow unpacks inside the pipeline's own checkout: git answers for the pipeline repository.
    assert f"build {tag.removeprefix('b')}," in out and f"commit {commit})" in out, (tag, commit, out)


def test_no_token_is_printed_in_any_nights_log(nights: Nights, night1: ActRun) -> None:
    for run in nights.runner.runs:
        text = run.log_path.read_text(encoding="utf-8", errors="replace")
        assert TOKEN not in text, run.log_path
