"""The workflow file: valid for GitHub, clean for zizmor, and thin (one command per step)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT

pytestmark = pytest.mark.integration

WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"
# The release operations around the nightly: its one retry and the dead-man check.
OPERATIONS = ROOT / ".github" / "workflows" / "operations.yml"
# The Saturday warm-up: next week's ROCm build compiled ahead, off the publish path.
WARM_UP = ROOT / ".github" / "workflows" / "warm-up.yml"
# The local composite action every job starts with (checkout, then this): Python and the one install.
SETUP = ROOT / ".github" / "actions" / "setup-pipeline" / "action.yml"
# What a step may run: nox, the pipeline, or installing them.
ALLOWED = re.compile(r"^(nox|python -m pipeline|python -m pip install|python -m uv pip install) ")
SHELL_CHAINING = re.compile(r"&&|\|\||[;|`]|\$\(|\n")


def tool(name: str) -> str:
    """The validator next to this Python (installed with the test extra), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def lines(path: Path = WORKFLOW) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def run_values(*paths: Path) -> list[str]:
    """Every step's ``run:`` line in ``paths`` (default: the workflow and its local action)."""
    values = []
    previous = ""
    for line in (line for path in paths or (WORKFLOW, SETUP) for line in lines(path)):
        match = re.match(r"^\s*(?:-\s+)?run:\s*(.*)$", line)
        # `defaults: run: shell: bash` is a setting, not a step.
        if match and previous.strip() != "defaults:":
            values.append(match.group(1).strip())
        previous = line
    return values


@pytest.mark.parametrize(
    ("schema", "paths"),
    [
        # One run per schema: check-jsonschema takes a few seconds to start, the files are checked each.
        ("vendor.github-workflows", (WORKFLOW, OPERATIONS, WARM_UP)),
        ("vendor.github-actions", (SETUP,)),
    ],
)
def test_schema_validation_passes(schema: str, paths: tuple[Path, ...]) -> None:
    proc = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", schema, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok" in proc.stdout


def test_zizmor_finds_nothing() -> None:
    proc = subprocess.run(
        [
            tool("zizmor"),
            "--offline",
            "--persona=pedantic",
            "--no-progress",
            str(WORKFLOW),
            str(SETUP),
            str(OPERATIONS),
            str(WARM_UP),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings" in proc.stdout + proc.stderr


def test_the_validators_catch_a_broken_workflow(tmp_path: Path) -> None:
    # The two checks above mean something only if they can fail.
    bad = tmp_path / "bad.yml"
    text = WORKFLOW.read_text(encoding="utf-8")
    bad.write_text(
        text.replace(
            'python -m pipeline cache-key "$LEG"', "python -m pipeline cache-key ${{ inputs.legs }}"
        ).replace("11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2", "v4")
    )
    zizmor = subprocess.run(
        [tool("zizmor"), "--offline", "--no-progress", str(bad)], capture_output=True, text=True
    )
    assert zizmor.returncode != 0
    assert "template-injection" in zizmor.stdout and "unpinned-uses" in zizmor.stdout
    broken = tmp_path / "broken.yml"
    broken.write_text(
        text.replace("runs-on: ubuntu-24.04\n    timeout-minutes: 15", "runs_on: ubuntu-24.04", 1)
    )
    schema = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(broken)],
        capture_output=True,
        text=True,
    )
    assert schema.returncode != 0


def test_every_step_runs_one_command() -> None:
    values = run_values()
    assert len(values) >= 10
    for value in values:
        assert value and value[0] not in "|>", f"multi-line run block: {value!r}"
        assert not SHELL_CHAINING.search(value), f"more than one command: {value!r}"
        assert "${{" not in value, f"expression in a run line (pass it via env): {value!r}"
        assert ALLOWED.match(value), f"a step that is not nox or the pipeline: {value!r}"


def test_the_build_job_drives_nox_and_the_cache_commands() -> None:
    values = run_values()
    assert 'nox --no-venv -s "$LEG" --no-dependencies' in values
    assert "nox --no-venv -s resolve" in values
    assert 'python -m pipeline cache-key "$LEG"' in values
    assert 'python -m pipeline cache-save "$LEG"' in values
    assert "python -m pipeline matrix --github --resolved out/resolved.json" in values
    assert "nox --no-venv -s prune -- --apply" in values
    assert "python -m pipeline report" in values
    # Publishing a subset of legs is a prerelease (never latest); the force input replaces published assets.
    assert "nox --no-venv -s publish -- --apply --partial" in values
    assert 'PIPELINE_FORCE: "${{ inputs.force }}"' in job_text("publish")
    assert "python -m pipeline alert --apply" in values
    assert "python -m pipeline release-exists --resolved out/resolved.json" in values


def test_every_action_is_pinned_to_a_commit_with_its_version() -> None:
    uses = [
        line.split("uses:", 1)[1].strip()
        for path in (WORKFLOW, SETUP, WARM_UP)
        for line in lines(path)
        if re.match(r"^\s*(?:-\s+)?uses:", line)
    ]
    assert len(uses) >= 10
    local = [value for value in uses if value.startswith("./")]
    # The only action that is not pinned is the repository's own (the checkout it comes from).
    assert set(local) == {"./.github/actions/setup-pipeline # zizmor: ignore[self-repository]"}
    for value in (value for value in uses if value not in local):
        assert re.match(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$", value), value
    used = {value.split("@")[0] for value in uses if value not in local}
    assert used == {
        "actions/checkout",
        "actions/setup-python",
        "actions/cache",
        "actions/cache/restore",
        "actions/cache/save",
        "actions/upload-artifact",
        "actions/download-artifact",
        "actions/attest-build-provenance",
        "azure/trusted-signing-action",
    }


def test_permissions_are_empty_at_the_top_and_minimal_per_job() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert re.search(r"^permissions: \{\}$", text, re.MULTILINE)
    jobs = re.split(r"^  (?=[a-z][\w-]*:$)", text.split("\njobs:\n", 1)[1], flags=re.MULTILINE)
    jobs = [j for j in jobs if j.strip()]
    assert [j.split(":", 1)[0] for j in jobs] == [
        "resolve",
        "shard",
        "build",
        "summary",
        "publish",
        "alert",
        "prune",
    ]
    special = {
        # Reads the past runs' record artifacts for the history page.
        "summary": {"contents": "read", "actions": "read"},
        "prune": {"contents": "read", "actions": "write"},
        # The only job that may write the repository's contents (the release), and sign its provenance ...
        "publish": {"contents": "write", "id-token": "write", "attestations": "write"},
        # ... and the only one that may touch issues.
        "alert": {"contents": "read", "issues": "write"},
    }
    for job in jobs:
        name = job.split(":", 1)[0]
        block = re.search(r"^    permissions:\n((?:      .*\n)+)", job, re.MULTILINE)
        flow = re.search(r"^    permissions: \{ (.*?) \}(?: +#.*)?$", job, re.MULTILINE)
        assert block or flow, f"job {name} has no permissions block"
        if block:
            pairs = re.finditer(r"^      (\w[\w-]*): (\w+)", block.group(1), re.MULTILINE)
        else:
            pairs = re.finditer(r"(\w[\w-]*): (\w+)", flow.group(1))
        granted = {m.group(1): m.group(2) for m in pairs}
        assert granted == special.get(name, {"contents": "read"}), name


def job_text(name: str) -> str:
    text = WORKFLOW.read_text(encoding="utf-8").split("\njobs:\n", 1)[1]
    return next(
        j for j in re.split(r"^  (?=[a-z][\w-]*:$)", text, flags=re.MULTILINE) if j.split(":", 1)[0] == name
    )


def step_if(job: str, step_name: str) -> str:
    match = re.search(
        r"- name: " + re.escape(step_name) + r"\n(?:        .*\n)*?        if: (.*)\n", job_text(job)
    )
    assert match, f"{job}: step {step_name!r} has no if"
    return match.group(1)


def test_the_cache_is_decided_and_saved_also_after_a_failed_or_timed_out_build() -> None:
    assert step_if("build", "Evict stale entries, decide whether to save").startswith("always()")
    assert step_if("build", "Save ccache").startswith("always() && steps.decide.outputs.save == 'true'")
    build = job_text("build")
    step_limit = int(
        re.search(r"- name: Build\n(?:        .*\n)*?        timeout-minutes: (\d+)", build).group(1)
    )
    job_limit = int(re.search(r"^    timeout-minutes: (\d+)", build, re.MULTILINE).group(1))
    assert step_limit < job_limit  # a timed-out build still leaves the job time to save


def test_publish_runs_once_per_tag_and_builds_are_skipped_when_the_release_exists() -> None:
    publish = job_text("publish")
    assert (
        'concurrency: { group: "publish-${{ needs.resolve.outputs.tag }}", cancel-in-progress: false }'
        in publish
    )
    assert "inputs.publish" in publish
    # A failed or skipped shard job never blocks a leg (docs/caches.md, "Shards for a cold build").
    assert (
        "if: ${{ !cancelled() && needs.resolve.result == 'success' && needs.resolve.outputs.build == 'true' }}"
        in job_text("build")
    )
    assert "if: needs.resolve.outputs.build == 'true' && " in job_text("shard")
    assert 'PIPELINE_FORCE: "${{ inputs.force }}"' in job_text("resolve")
    assert "needs.resolve.outputs.build == 'true'" in publish
    # The jobs that read the builds' records do not run (and fail) when nothing was built.
    assert "needs.resolve.outputs.build == 'true'" in job_text("summary")


def test_inputs_reach_steps_only_through_env() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    for name in ("rocm", "tag", "legs"):
        pattern = r"([\w-]+): \"?\$\{\{ inputs\." + name + r" \}\}\"?(?:,|\s*\}|$)"
        uses_of_input = re.findall(pattern, text, re.MULTILINE)
        assert uses_of_input and all(var.startswith("PIPELINE_") for var in uses_of_input), name


def test_the_source_is_made_once_and_handed_to_every_leg() -> None:
    text = WORKFLOW.read_text()
    assert "python -m pipeline source --resolved out/resolved.json" in run_values()
    resolve_job = text.split("\n  build:\n")[0]
    build_job = text.split("\n  build:\n")[1].split("\n  summary:\n")[0]
    assert (
        "with: { name: source, path: out/source/, if-no-files-found: error, overwrite: true }" in resolve_job
    )
    assert 'source: "${{ steps.source.outputs.archive }}"' in resolve_job
    assert 'PIPELINE_SOURCE_ARCHIVE: "out/source/${{ needs.resolve.outputs.source }}"' in build_job
    # Downloaded (by the setup action, into the folder the archive's variable names) before the build step runs.
    assert build_job.index("with: { download: source }") < build_job.index('-s "$LEG"')
    assert "with: { name: source, path: out/source }" in SETUP.read_text(encoding="utf-8")


def test_a_rerun_of_failed_jobs_may_upload_the_same_artifacts_again() -> None:
    """Without overwrite, GitHub answers 409 for `record-<leg>` and `source` on a re-run."""
    text = WORKFLOW.read_text(encoding="utf-8")
    uploads = re.findall(r"uses: actions/upload-artifact@.*\n((?:        .*\n)+)", text)
    assert len(uploads) == 4
    for upload in uploads:
        assert "overwrite: true" in upload, upload


def test_the_alert_counts_a_cancelled_job_as_a_failure() -> None:
    """A cancelled build or publish must not close the alert issue."""
    status = re.search(r"PIPELINE_NIGHTLY_STATUS: \"\$\{\{ (.*?) \}\}\"", job_text("alert")).group(1)
    assert "contains(needs.*.result, 'failure')" in status
    assert "contains(needs.*.result, 'cancelled')" in status
    assert status.endswith("&& 'failure' || 'success'")


def test_a_manual_run_publishes_only_when_asked() -> None:
    """A manual run of some legs must not become the tag's release by default."""
    text = WORKFLOW.read_text(encoding="utf-8")
    publish = re.search(r"^      publish:\n((?:        .*\n)+)", text, re.MULTILINE).group(1)
    assert "type: boolean" in publish and "default: false" in publish
    assert "(github.event_name != 'workflow_dispatch' || inputs.publish)" in job_text("publish")


def test_each_job_installs_once_and_the_log_is_not_taken_for_a_terminal() -> None:
    """One install per job (nox reuses it). The log itself (progress lines and heartbeats,
    unwrapped, with the workflow's FORCE_COLOR) is the act scenarios' to check (test_act_nightly.py)."""
    text = WORKFLOW.read_text(encoding="utf-8")
    assert not [v for v in run_values(WORKFLOW) if v.startswith(("python -m pip ", "python -m uv "))], (
        "install in the setup action only"
    )
    assert [v for v in run_values(SETUP) if v.startswith("python -m ")] == [
        "python -m pip install uv",
        'python -m uv pip install --python "$JOB_PYTHON" . nox',
    ]
    # The job's own Python, as setup-python names it: not whatever UV_PYTHON or VIRTUAL_ENV the runner has.
    setup = SETUP.read_text(encoding="utf-8")
    assert "    - id: python\n      uses: actions/setup-python@" in setup
    assert "JOB_PYTHON: ${{ steps.python.outputs.python-path }}" in setup
    for value in run_values(WORKFLOW):
        assert not value.startswith("nox ") or value.startswith("nox --no-venv "), value
    jobs = [
        j
        for j in re.split(r"^  (?=[a-z][\w-]*:$)", text.split("\njobs:\n", 1)[1], flags=re.MULTILINE)
        if j.strip()
    ]
    for job in jobs:
        steps = re.findall(r"^      - (?:uses|name): (\S+)", job, re.MULTILINE)
        assert steps[:2] == [
            "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
            "./.github/actions/setup-pipeline",
        ], job


def test_the_workflow_reads_as_the_runs_graph() -> None:
    """The setup lives in the local action; the workflow stays short."""
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "setup-python" not in text
    code = [line for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    # 200 until the shards: the shard job (a job of its own, with its key, lookup, compile and save) and
    # one restore step per shard in the build job (actions/cache restores one key per step) are 43 lines.
    assert len(code) <= 220, len(code)


ATTEST = "actions/attest-build-provenance@e8998f949152b193b063cb0ec769d69d929409be # v2.4.0"


def test_publish_attests_the_bundles_and_sboms_except_under_act() -> None:
    publish = job_text("publish")
    step = re.search(
        r"      - name: (Attest[^\n]*)\n        if: (.*)\n        uses: (.*)\n        with: (.*)\n", publish
    )
    assert step, publish
    name, condition, uses, with_ = step.groups()
    assert uses == ATTEST
    # act sets ACT; GitHub does not. The step's name carries the reason act's log shows for the skip.
    assert condition == "${{ !env.ACT }}" and "skipped under act" in name and "OIDC" in name
    assert with_ == '{ subject-path: "out/dist/*" }'  # the bundles and the SBOMs beside them
    # After the release is published, in the same job.
    assert publish.index("nox --no-venv -s publish") < publish.index(ATTEST)
    others = WORKFLOW.read_text(encoding="utf-8").replace(publish, "")
    assert "id-token" not in others.split("\njobs:\n", 1)[1] and "attestations:" not in others


def test_operations_run_the_retry_and_the_deadman_one_command_each() -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    values = run_values(OPERATIONS)
    assert values == [
        'python -m pipeline retry --run-id "$RUN_ID" --apply',
        "python -m pipeline deadman --apply",
    ]
    for value in values:
        assert not SHELL_CHAINING.search(value) and "${{" not in value and ALLOWED.match(value), value
    # The retry follows the nightly's completion and reads the failed run; the dead-man check is daily.
    assert re.search(r"workflow_run:.*\n    workflows: \[nightly\]\n    types: \[completed\]", text)
    assert re.search(r"^name: nightly$", WORKFLOW.read_text(encoding="utf-8"), re.MULTILINE)
    assert 'RUN_ID: "${{ github.event.workflow_run.id }}"' in text
    assert re.search(r"schedule: \[\{ cron: ", text)
    retry, deadman = text.split("\n  retry:\n", 1)[1].split("\n  deadman:\n", 1)
    assert "actions: write" in retry and "checks: read" in retry and "issues" not in retry
    assert "permissions: { contents: read, issues: write }" in deadman and "actions: write" not in deadman
    assert re.search(r"^permissions: \{\}$", text, re.MULTILINE)


def test_every_job_downloads_the_artifacts_it_reads_through_the_setup_action() -> None:
    """One download step per kind, in the setup action, run only for the jobs that name it."""
    setup = SETUP.read_text(encoding="utf-8")
    for kind in ("source", "bundles", "records"):
        assert f"if: contains(inputs.download, '{kind}')" in setup, kind
    assert "download-artifact" not in WORKFLOW.read_text(encoding="utf-8")
    wants = {"build": "source", "summary": "records", "publish": "bundles records source", "alert": "records"}
    for job, download in wants.items():
        assert f"        with: {{ download: {download} }}\n" in job_text(job), job
    assert "download:" not in job_text("resolve") + job_text("prune")


def test_the_two_workflows_stay_under_260_lines_of_yaml() -> None:
    """The YAML is a thin shell over nox and the pipeline: what repeats goes into the setup action or a session.

    200 until the Windows legs were signed: the sign step's inputs (secrets a step alone may see, so the
    workflow itself must name them) and the pack step after it are 12 lines that repeat nothing. 215 until
    the shards: their job and the build's restore steps are 43 lines (test_the_workflow_reads_as_the_runs_graph)."""
    counted = 0
    for name in ("nightly.yml", "operations.yml"):
        lines = (ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8").splitlines()
        counted += sum(1 for line in lines if line.strip() and not line.lstrip().startswith("#"))
    assert counted < 260, f"{counted} lines of YAML in nightly.yml and operations.yml"


def test_only_the_sign_step_reads_the_signing_secrets() -> None:
    """The build runs llama.cpp's CMake files and compilers: no step but the signer's sees a signing secret, and it
    runs only when the build staged a bundle for it."""
    text = job_text("build")
    steps = re.split(r"\n      - ", text)
    with_secrets = [step for step in steps if "secrets." in step]
    assert len(with_secrets) == 1
    (sign,) = with_secrets
    assert "uses: azure/trusted-signing-action@" in sign and "if: steps.build.outputs.staged != ''" in sign
    for name in (
        "AZURE_TENANT_ID",
        "AZURE_CLIENT_ID",
        "AZURE_CLIENT_SECRET",
        "AZURE_TRUSTED_SIGNING_ACCOUNT_NAME",
        "AZURE_CERTIFICATE_PROFILE_NAME",
    ):
        assert f"secrets.{name}" in sign
    assert "environment: ${{ matrix.environment }}" in text
    assert 'python -m pipeline pack "$LEG"' in run_values()


def test_the_warm_up_runs_saturdays_off_the_publish_path_one_command_per_step() -> None:
    text = WARM_UP.read_text(encoding="utf-8")
    # After the Saturday-dated build is out, before Sunday's first night (nightly.yml: 09:17 UTC daily).
    assert 'schedule: [{ cron: "17 18 * * 6" }]' in text
    assert re.search(r"^permissions: \{\}$", text, re.MULTILINE)
    jobs = re.split(r"^  (?=[a-z][\w-]*:$)", text.split("\njobs:\n", 1)[1], flags=re.MULTILINE)
    names = [j.split(":", 1)[0] for j in jobs if j.strip()]
    # No publish, no release: nothing of the nightly's publish path waits for it or is written by it.
    assert names == ["plan", "warm", "alert"]
    assert "contents: write" not in text and "publish" not in run_values(WARM_UP)
    for value in run_values(WARM_UP):
        assert ALLOWED.match(value) and not SHELL_CHAINING.search(value), value
    assert "python -m pipeline warm-up" in run_values(WARM_UP)
    # Its failure opens its own issue, never the nightly's.
    assert "alert --apply --label warm-up-failure --run-name warm-up" in text
    # The same cache steps as the nightly's build, so the key (-warm) and folder are cache-key's.
    assert 'python -m pipeline cache-key "$LEG"' in text and 'python -m pipeline cache-save "$LEG"' in text


def test_shard_jobs_run_only_when_the_legs_cache_cannot_hit_and_the_leg_restores_each_by_its_key() -> None:
    """docs/caches.md, "Shards for a cold build": the shard job's matrix is the resolve job's second output; each
    shard looks the leg's key up (lookup-only, nothing downloaded) and compiles only when nothing matched; the
    leg's job restores each shard's cache by its exact key, one step per shard up to MAX_SHARDS."""
    from pipeline.inputs.leg import MAX_SHARDS

    resolve, shard, build = job_text("resolve"), job_text("shard"), job_text("build")
    assert 'shards: "${{ steps.matrix.outputs.shards }}"' in resolve
    assert 'strategy: { fail-fast: false, matrix: "${{ fromJSON(needs.resolve.outputs.shards) }}" }' in shard
    # GitHub evaluates a job's if before its matrix: an empty shard list skips the job (act as well).
    assert "contains(needs.resolve.outputs.shards, '\"leg\"')" in shard
    assert "runs-on: ${{ matrix.runner }}" in shard
    assert 'python -m pipeline cache-key "$LEG" --shard "$SHARD"' in shard
    lookup = re.search(r"- name: Can the leg's own cache hit\?.*\n((?:        .*\n)+)", shard).group(1)
    assert "uses: actions/cache/restore@" in lookup and "lookup-only: true" in lookup
    assert (
        'key: "${{ steps.key.outputs.key }}", restore-keys: "${{ steps.key.outputs.restore-keys }}"' in lookup
    )
    assert 'path: "${{ steps.key.outputs.ccache-dir }}"' in lookup  # the leg's own path: its cache's version
    assert (
        step_if("shard", "Compile this shard's part of the leg")
        == "steps.lookup.outputs.cache-matched-key == ''"
    )
    assert 'python -m pipeline shard "$LEG" --index "$SHARD" --of "$OF"' in run_values()
    save = step_if("shard", "Save the shard's cache")
    assert save.startswith("always() && ") and "steps.compile.outcome == 'failure'" in save
    assert (
        'key: "${{ steps.key.outputs.shard-key }}"' in shard and "restore-keys" not in shard.split("Save")[1]
    )
    assert "needs: [resolve, shard]" in build
    restores = re.findall(
        r"- name: Restore shard (\d)'s cache\n        if: (.*)\n        uses: (.*)\n        with: (.*)\n",
        build,
    )
    assert [int(i) for i, *_ in restores] == list(range(1, MAX_SHARDS + 1))
    for index, condition, uses, with_ in restores:
        assert condition == f"steps.key.outputs.shard-key-{index} != ''"
        assert uses.startswith("actions/cache/restore@")
        assert with_ == (
            f'{{ path: "${{{{ steps.key.outputs.shard-dir-{index} }}}}", key: "${{{{ steps.key.outputs.shard-key-{index} }}}}" }}'
        )
    # Restored before the build, which merges them into the leg's cache.
    assert build.index("Restore shard 1's cache") < build.index('-s "$LEG"')
