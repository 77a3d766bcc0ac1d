"""`publish`, `alert` and `release-exists` against the fake GitHub (API and uploads hosts) on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.errors import GitHubError, PublishError
from pipeline.release.plan import LocalAsset, UploadPlan, plan_uploads
from pipeline.release.publish import apply_release
from pipeline.release.releases_client import ReleasesClient
from pipeline.util.http_retry import RetryPolicy
from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.release_runs import (
    ASSETS,
    COMMIT,
    LEGS,
    MATRIX,
    REPO,
    SOURCE_ASSET,
    TAG,
    TOKEN,
    assert_release_complete,
    env_for,
    make_run,
    publish,
)

# No waits between attempts: these servers answer at once, and a test never sleeps.
NO_WAIT = RetryPolicy(backoff=0)

pytestmark = pytest.mark.integration


def test_dry_run_changes_nothing_and_shows_the_plan(tmp_path: Path) -> None:
    make_run(tmp_path / "out")
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = publish(gh, tmp_path / "out")
        assert proc.returncode == 0, proc.stderr
        assert gh.releases == []
        assert {r.method for r in gh.requests} == {"GET"}
    assert "release b7000: none yet: a draft will be created" in proc.stdout
    assert f"dry run: would upload {ASSETS}, keep 0 (pass --apply to publish)" in proc.stdout
    assert proc.stdout.index("llama-b7000-bin-ubuntu-vulkan") < proc.stdout.index("SHA256SUMS")


def test_create_upload_to_the_uploads_host_publish_then_a_rerun_changes_nothing(tmp_path: Path) -> None:
    bundles = make_run(tmp_path / "out")
    outputs = tmp_path / "gh-output"
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = publish(gh, tmp_path / "out", "--apply", GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(outputs))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert_release_complete(gh, bundles, tmp_path)
        uploads = [r for r in gh.requests if r.method == "POST" and r.path.endswith("/assets")]
        assert len(uploads) == ASSETS and all(r.uploads for r in uploads)
        assert not any(r.uploads for r in gh.requests if r not in uploads)
        release = gh.release(TAG)
        assert release is not None
        assert "| cuda | `llama-b7000-bin-ubuntu-cuda-x64.tar.gz` | cuda-toolkit" not in release["body"]
        i = LEGS.index("cuda")  # make_run's figures for the cuda leg: hit rate 0.25 * i, 100 + i seconds
        assert (
            f"| cuda | `llama-b7000-bin-ubuntu-cuda-x64.tar.gz` | cuda-toolchain | {25.0 * i:.1f}% | "
            f"1m {40 + i}s | not checked |"
        ) in release["body"]

        before = len(gh.requests)
        again = publish(gh, tmp_path / "out", "--apply")
        assert again.returncode == 0, again.stderr
        assert not [r for r in gh.requests[before:] if r.method != "GET"]
        assert f"{ASSETS} kept, already live" in again.stdout
    assert "release-url<<" in outputs.read_text()


def test_a_5xx_and_a_429_in_the_middle_of_the_uploads_are_retried(tmp_path: Path) -> None:
    bundles = make_run(tmp_path / "out")
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.fault("POST", r"/assets\?name=llama-b7000-bin-ubuntu-cuda", 502)
        gh.fault("POST", r"/assets\?name=llama-b7000-bin-ubuntu-rocm", 429, headers={"Retry-After": "0"})
        proc = publish(gh, tmp_path / "out", "--apply")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert_release_complete(gh, bundles, tmp_path)
        statuses = [r.status for r in gh.requests if r.uploads]
        assert statuses.count(502) == 1 and statuses.count(429) == 1 and statuses.count(201) == ASSETS


def test_a_crash_after_half_the_assets_then_a_resume(tmp_path: Path) -> None:
    bundles = make_run(tmp_path / "out")
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline", "--matrix", str(MATRIX), "publish", "--repo", REPO,
             "--api-url", gh.api_url, "--out", str(tmp_path / "out"), "--apply"],
            env={**os.environ, "PYTHONPATH": str(ROOT), **env_for(gh)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

        def crash(done: int) -> None:
            if done == 2:
                os.kill(proc.pid, signal.SIGKILL)

        gh.on_upload = crash
        proc.communicate(timeout=120)
        gh.on_upload = None
        assert proc.returncode == -signal.SIGKILL
        release = gh.release(TAG)
        assert release is not None and release["draft"] is True  # a draft, never half a live release
        kept_before = {a["name"] for a in release["assets"] if a["state"] == "uploaded"}
        assert len(kept_before) >= 2 and "SHA256SUMS" not in kept_before

        resume = publish(gh, tmp_path / "out", "--apply")
        assert resume.returncode == 0, resume.stdout + resume.stderr
        assert_release_complete(gh, bundles, tmp_path)
        for name in kept_before:
            assert f"keep      {name}" in resume.stdout
        # Every asset uploaded once, the ones kept were not sent again.
        assert gh.uploads_done == ASSETS


def test_the_coverage_gate_blocks_a_failed_leg_unless_allowed(tmp_path: Path) -> None:
    bundles = make_run(tmp_path / "out", failed=("cuda",))
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = publish(gh, tmp_path / "out", "--apply")
        assert proc.returncode == PublishError.exit_code
        assert proc.stderr.strip().splitlines() == [
            "error: 1 expected leg(s) cannot be published: cuda: the leg failed "
            "(pass --allow-missing LEG to publish without)"
        ]
        assert gh.requests == []  # refused before any request

        allowed = publish(gh, tmp_path / "out", "--apply", "--allow-missing", "cuda")
        assert allowed.returncode == 0, allowed.stderr
        assert_release_complete(gh, bundles, tmp_path)
        release = gh.release(TAG)
        assert release is not None and "| cuda | missing | - | - | - | the leg failed |" in release["body"]


def test_a_differing_asset_is_refused_unless_replace(tmp_path: Path) -> None:
    bundles = make_run(tmp_path / "out")
    cpu = "llama-b7000-bin-ubuntu-x64.tar.gz"
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_release(TAG, draft=True, assets={cpu: b"another build"})
        proc = publish(gh, tmp_path / "out", "--apply")
        assert proc.returncode == PublishError.exit_code
        assert f"release b7000 already holds different assets: {cpu} (sha256 " in proc.stderr
        assert gh.uploads_done == 0
        replaced = publish(gh, tmp_path / "out", "--apply", "--replace")
        assert replaced.returncode == 0, replaced.stderr
        assert_release_complete(gh, bundles, tmp_path)


def test_already_exists_on_upload_keeps_an_identical_asset(tmp_path: Path) -> None:
    bundles = make_run(tmp_path / "out", legs=("cpu",))
    ((name, path),) = bundles.items()
    asset = LocalAsset(name=name, sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                       size=path.stat().st_size, path=str(path))  # fmt: skip
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_release(TAG, draft=True, assets={name: path.read_bytes()})
        client = ReleasesClient(REPO, TOKEN, api_url=gh.api_url, retry=NO_WAIT)
        release = client.find_release(TAG)
        # A plan made before a parallel upload landed: the upload answers 422 already_exists.
        stale: UploadPlan = plan_uploads([asset], [])
        outcome = apply_release(client, tag=TAG, name=TAG, notes="n", release=release, plan=stale)
        assert outcome.kept == [name] and outcome.uploaded == []
        assert [r.status for r in gh.requests if r.uploads] == [422]
        assert gh.release(TAG)["draft"] is False  # type: ignore[index]


def test_an_existing_release_skips_the_run_unless_forced(tmp_path: Path) -> None:
    resolved = tmp_path / "resolved.json"
    # A whole resolution, as `resolve` writes it (it is validated when read).
    resolved.write_text(
        """{"format": 1, "now": "2026-08-10T09:17:00Z", "rocm_policy": "weekly", "cutoff": "20260808", "index_url": null, "legs": {}, "source": {"repo": "https://github.com/ggml-org/llama.cpp", "base_tag": "b7000", "base_commit": null, "base_date": null, "tag": "b7000", "mix": [], "mix_hash": null, "commit": null}}"""
    )
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:

        def ask(*extra: str, **env: str) -> dict[str, str]:
            outputs = tmp_path / f"out-{len(gh.requests)}"
            proc = run_pipeline(
                [
                    "release-exists",
                    "--repo",
                    REPO,
                    "--api-url",
                    gh.api_url,
                    "--resolved",
                    str(resolved),
                    *extra,
                ],
                env=env_for(gh, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(outputs), **env),
            )
            assert proc.returncode == 0, proc.stderr
            text = outputs.read_text()
            return {k: text.split(f"{k}<<", 1)[1].split("\n")[1] for k in ("exists", "build")}

        assert ask() == {"exists": "false", "build": "true"}
        gh.add_release(TAG, draft=True)  # a crashed run's draft is not a release: build (publish resumes)
        assert ask() == {"exists": "false", "build": "true"}
        gh.releases[0]["draft"] = False
        assert ask() == {"exists": "true", "build": "false"}
        assert ask("--force") == {"exists": "true", "build": "true"}
        assert ask(PIPELINE_FORCE="true") == {"exists": "true", "build": "true"}


def test_the_token_is_never_printed_even_when_the_server_echoes_it(tmp_path: Path) -> None:
    make_run(tmp_path / "out")
    echo = json.dumps({"message": f"Bad credentials: Bearer {TOKEN}"}).encode()
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.fault("POST", r"/releases$", 401, body=echo)
        proc = publish(gh, tmp_path / "out", "--apply")
        assert proc.returncode == GitHubError.exit_code
        assert TOKEN not in proc.stdout + proc.stderr
        assert "Bad credentials: Bearer ***" in proc.stderr
        assert "Traceback" not in proc.stderr

        gh.fault("GET", r"/issues", 403, body=echo)
        alert = run_pipeline(
            ["--matrix", str(MATRIX), "alert", "--repo", REPO, "--api-url", gh.api_url, "--status", "failure",
             "--out", str(tmp_path / "out")],
            env=env_for(gh),
        )  # fmt: skip
        assert alert.returncode == GitHubError.exit_code
        assert TOKEN not in alert.stdout + alert.stderr and "***" in alert.stderr

    client = ReleasesClient(REPO, TOKEN, api_url="http://127.0.0.1:9", retry=RetryPolicy(attempts=1))
    assert TOKEN not in repr(client)


def test_alert_opens_one_issue_comments_then_closes_on_success(tmp_path: Path) -> None:
    make_run(tmp_path / "out", failed=("cuda",), legs=("cpu", "cuda"))

    def alert(gh: FakeGitHub, status: str) -> subprocess.CompletedProcess[str]:
        return run_pipeline(
            ["--matrix", str(MATRIX), "alert", "--repo", REPO, "--api-url", gh.api_url, "--status", status,
             "--out", str(tmp_path / "out"), "--apply"],
            env=env_for(gh, PIPELINE_LEGS="cpu,cuda,vulkan", GITHUB_SERVER_URL="https://github.com",
                        GITHUB_REPOSITORY=REPO, GITHUB_RUN_ID="77"),
        )  # fmt: skip

    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_issue("unrelated", ["bug"])
        first = alert(gh, "failure")
        assert first.returncode == 0, first.stderr
        assert len(gh.issues) == 2
        issue = gh.issues[1]
        assert issue["labels"] == [{"name": "nightly-failure"}]
        assert issue["body"] == (
            f"The nightly for `{TAG}` failed ([run](https://github.com/{REPO}/actions/runs/77)).\n\n"
            "Failed legs:\n"
            "- `cuda`: the build failed\n"
            "- `vulkan`: no record: the job failed before writing one, timed out or was skipped\n"
        )
        second = alert(gh, "failure")
        assert second.returncode == 0 and len(gh.issues) == 2  # one issue, a comment on it
        assert len(issue["comments"]) == 1 and "`cuda`" in issue["comments"][0]
        fixed = alert(gh, "success")
        assert fixed.returncode == 0, fixed.stderr
        assert issue["state"] == "closed" and gh.issues[0]["state"] == "open"
        quiet = alert(gh, "success")
        assert "nothing to do" in quiet.stdout and len(gh.issues) == 2


def test_the_warm_ups_alert_speaks_of_the_warm_up_in_its_log(tmp_path: Path) -> None:
    """warm-up.yml's alert job (--run-name warm-up): its one line names the warm-up, not the nightly (act's run of
    the workflow printed "nightly success" there, tests/integration/test_act_warm_up.py)."""
    make_run(tmp_path / "out", legs=("cpu",))
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = run_pipeline(
            ["--matrix", str(MATRIX), "alert", "--repo", REPO, "--api-url", gh.api_url, "--status", "success",
             "--label", "warm-up-failure", "--run-name", "warm-up", "--out", str(tmp_path / "out"), "--apply"],
            env=env_for(gh, PIPELINE_LEGS="cpu"),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "warm-up success: no open 'warm-up-failure' issue, nothing to do\n"
        assert gh.issues == []


def test_nox_publish_session_is_a_dry_run_without_a_token(tmp_path: Path) -> None:
    make_run(tmp_path / "out", legs=("cpu",))
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY")}
    proc = subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "--force-venv-backend", "none",
         "-s", "publish", "--", "--out", str(tmp_path / "out"), "--legs", "cpu", "--partial"],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT), "PIPELINE_MATRIX": str(MATRIX)},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "release b7000: not looked up (no token or repository" in proc.stdout
    assert "dry run: would upload 3, keep 0" in proc.stdout  # the bundle, the source archive, SHA256SUMS
    sums = (tmp_path / "out" / "release" / "SHA256SUMS").read_text()
    # The source archive is listed under its asset name: check it as a download would be named.
    shutil.copyfile(
        tmp_path / "out" / "source" / "llama.cpp-b7000.tar.gz", tmp_path / "out" / "dist" / SOURCE_ASSET
    )
    check = subprocess.run(["sha256sum", "-c", str(tmp_path / "out" / "release" / "SHA256SUMS")],
                           cwd=tmp_path / "out" / "dist", capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0 and sums.count("\n") == 2


def release_exists(gh: FakeGitHub, tmp: Path, *extra: str, **env: str) -> dict[str, str]:
    outputs = tmp / f"exists-{len(gh.requests)}"
    proc = run_pipeline(["release-exists", "--repo", REPO, "--api-url", gh.api_url, "--tag", TAG, *extra],
                        env=env_for(gh, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(outputs), **env))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    text = outputs.read_text()
    return {k: text.split(f"{k}<<", 1)[1].split("\n")[1] for k in ("exists", "build")}


def test_a_run_of_some_legs_is_a_prerelease_never_latest_and_the_full_run_completes_it(
    tmp_path: Path,
) -> None:
    make_run(tmp_path / "manual", legs=("cpu",))
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        # A manual run with legs=cpu, publish left at its default: refused before any request.
        refused = publish(gh, tmp_path / "manual", "--apply", PIPELINE_LEGS="cpu")
        assert refused.returncode == PublishError.exit_code
        assert refused.stderr.strip().splitlines() == [
            f"error: the run expects 1 of the {len(LEGS)} legs of matrix.toml (not {', '.join(x for x in LEGS if x != 'cpu')}): "
            "pass --partial to publish a partial release (a prerelease, never latest), or build every leg"
        ]
        assert gh.requests == []

        partial = publish(gh, tmp_path / "manual", "--apply", "--partial", PIPELINE_LEGS="cpu")
        assert partial.returncode == 0, partial.stdout + partial.stderr
        release = gh.release(TAG)
        assert release is not None and release["draft"] is False and release["prerelease"] is True
        assert gh.latest_tag() is None  # never what users get as "latest"
        assert "**Partial release** (a prerelease): no bundle for `rocm-linux-gfx110X`" in release["body"]
        # The scheduled run does not take it for the tag's release: it builds every leg.
        assert release_exists(gh, tmp_path) == {"exists": "false", "build": "true"}

        # The scheduled run: every leg, rebuilt (other bytes), no --replace: it completes the release.
        bundles = make_run(tmp_path / "nightly")
        full = publish(gh, tmp_path / "nightly", "--apply")
        assert full.returncode == 0, full.stdout + full.stderr
        assert_release_complete(gh, bundles, tmp_path)
        release = gh.release(TAG)
        assert release is not None and release["prerelease"] is False and "Partial" not in release["body"]
        assert gh.latest_tag() == TAG
        assert release_exists(gh, tmp_path) == {"exists": "true", "build": "false"}

        # A partial run never publishes onto the full release (its SHA256SUMS would drop four legs).
        before = len(gh.requests)
        again = publish(gh, tmp_path / "manual", "--apply", "--partial", "--replace", PIPELINE_LEGS="cpu")
        assert again.returncode == PublishError.exit_code
        assert "error: release b7000 is already a full release; this run lacks" in again.stderr
        assert [r.method for r in gh.requests[before:]] == ["GET"] * (len(gh.requests) - before)


def test_a_forced_rebuild_replaces_the_assets_of_a_published_release(tmp_path: Path) -> None:
    make_run(tmp_path / "first")
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        assert publish(gh, tmp_path / "first", "--apply").returncode == 0
        first_body = gh.release(TAG)["body"]  # type: ignore[index]
        rebuilt = make_run(tmp_path / "forced")
        records = sorted((tmp_path / "forced").glob("*/record.json"))
        for path in records:  # the forced rebuild took longer: the notes say so
            path.write_text(path.read_text().replace('"wall_seconds": 10', '"wall_seconds": 20'))
        # The rebuilt bundles differ from the published ones: without the run's force, refused.
        plain = publish(gh, tmp_path / "forced", "--apply")
        assert plain.returncode == PublishError.exit_code and "already holds different assets" in plain.stderr
        # The workflow's `force` input reaches publish as PIPELINE_FORCE: the assets are replaced.
        forced = publish(gh, tmp_path / "forced", "--apply", PIPELINE_FORCE="true")
        assert forced.returncode == 0, forced.stdout + forced.stderr
        assert_release_complete(gh, rebuilt, tmp_path)
        release = gh.release(TAG)
        assert release is not None and release["body"] != first_body and "| 3m 21s |" in release["body"]
        assert gh.latest_tag() == TAG and release["prerelease"] is False


def test_the_tag_is_created_on_llama_cpps_commit_when_the_repository_holds_it(tmp_path: Path) -> None:
    make_run(tmp_path / "out")
    # A repository that holds llama.cpp's history (a fork or mirror): the tag goes on the built commit.
    with FakeGitHub(repo=REPO, token=TOKEN, commits=(COMMIT,)) as gh:
        proc = publish(gh, tmp_path / "out", "--apply")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert gh.release(TAG)["target_commitish"] == COMMIT  # type: ignore[index]
        assert [r.status for r in gh.requests if r.method == "POST" and r.path.endswith("/releases")] == [201]


def test_a_commit_the_repository_lacks_falls_back_to_the_default_branch_and_the_notes_name_it(
    tmp_path: Path,
) -> None:
    bundles = make_run(tmp_path / "out")
    # The pipeline's own repository: GitHub answers 422 invalid target_commitish for llama.cpp's commit.
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = publish(gh, tmp_path / "out", "--apply")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert_release_complete(gh, bundles, tmp_path)
        release = gh.release(TAG)
        assert release is not None and release["target_commitish"] == "main"
        assert [r.status for r in gh.requests if r.method == "POST" and r.path.endswith("/releases")] == [
            422,
            201,
        ]
        assert f"- llama.cpp tag: `{TAG}`, commit `{COMMIT}`" in release["body"]
        assert (
            f"tagging the default branch: not in this repository: llama.cpp's commit {COMMIT}" in proc.stdout
        )


@pytest.mark.parametrize(
    "bundle", ["/etc/hostname", "../../../../../etc/hostname", "dist/../../hostname", "cpu/../../hostname"]
)
def test_a_record_naming_a_file_outside_dist_is_refused(tmp_path: Path, bundle: str) -> None:
    """A record is another job's artifact: its `bundle` never puts a file from outside OUT/dist/ on the release."""
    out = tmp_path / "a" / "b" / "c" / "d" / "out"
    make_run(out)
    (tmp_path / "a" / "hostname").write_text("secret host\n")
    record = json.loads((out / "cpu" / "record.json").read_text())
    (out / "cpu" / "record.json").write_text(json.dumps({**record, "bundle": bundle}))
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = publish(gh, out, "--apply")
        assert gh.requests == []  # refused before any request
    assert proc.returncode == PublishError.exit_code, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {out / 'cpu' / 'record.json'}: bundle"), lines
    assert "Traceback" not in proc.stderr and not (out / "release").exists()


def test_a_bundle_linked_out_of_dist_is_refused(tmp_path: Path) -> None:
    bundles = make_run(tmp_path / "out")
    name = next(iter(bundles))
    (tmp_path / "elsewhere").write_text("not a bundle\n")
    bundles[name].unlink()
    bundles[name].symlink_to(tmp_path / "elsewhere")
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = publish(gh, tmp_path / "out", "--apply")
        assert gh.requests == []
    assert proc.returncode == PublishError.exit_code
    assert "leads out of" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_record_without_status_is_not_published_as_a_success(tmp_path: Path) -> None:
    make_run(tmp_path / "out")
    record = json.loads((tmp_path / "out" / "cuda" / "record.json").read_text())
    del record["status"]
    (tmp_path / "out" / "cuda" / "record.json").write_text(json.dumps(record))
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = publish(gh, tmp_path / "out", "--apply")
        assert gh.requests == []
    assert proc.returncode == PublishError.exit_code
    assert proc.stderr.strip().splitlines() == [
        "error: 1 expected leg(s) cannot be published: cuda: its record has no status "
        "(pass --allow-missing LEG to publish without)"
    ]


@pytest.mark.parametrize(
    ("label", "why"),
    [
        ("", "--label: empty: the alert needs a label of its own"),
        ("  ", "--label: empty"),
        ("nightly,failure", "--label 'nightly,failure': one label, without commas"),
        (" nightly", "no leading or trailing space"),
    ],
)
def test_alert_refuses_a_label_that_is_not_one_label(tmp_path: Path, label: str, why: str) -> None:
    make_run(tmp_path / "out", legs=("cpu",))
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_issue("unrelated", ["bug"])
        for status in ("success", "failure"):
            proc = run_pipeline(
                ["--matrix", str(MATRIX), "alert", "--repo", REPO, "--api-url", gh.api_url, "--status", status,
                 "--out", str(tmp_path / "out"), "--label", label, "--apply"],
                env=env_for(gh, PIPELINE_LEGS="cpu"),
            )  # fmt: skip
            assert proc.returncode == 2, proc.stdout + proc.stderr
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and why in lines[0], lines
        assert gh.requests == [] and gh.issues[0]["state"] == "open" and len(gh.issues) == 1
