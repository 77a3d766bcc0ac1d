"""The workflow file: valid for GitHub, clean for zizmor, and thin (one command per step)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT

pytestmark = pytest.mark.integration

WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"
# What a step may run: nox, the pipeline, or installing them.
ALLOWED = re.compile(r"^(nox|python -m pipeline|python -m pip install) ")
SHELL_CHAINING = re.compile(r"&&|\|\||[;|`]|\$\(|\n")


def tool(name: str) -> str:
    """The validator next to this Python (installed with the test extra), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def lines() -> list[str]:
    return WORKFLOW.read_text(encoding="utf-8").splitlines()


def run_values() -> list[str]:
    values = []
    previous = ""
    for line in lines():
        match = re.match(r"^\s*(?:-\s+)?run:\s*(.*)$", line)
        # `defaults: run: shell: bash` is a setting, not a step.
        if match and previous.strip() != "defaults:":
            values.append(match.group(1).strip())
        previous = line
    return values


def test_schema_validation_passes() -> None:
    proc = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok" in proc.stdout


def test_zizmor_finds_nothing() -> None:
    proc = subprocess.run(
        [tool("zizmor"), "--offline", "--persona=pedantic", "--no-progress", str(WORKFLOW)],
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
        text.replace("python -m pipeline cache-key \"$LEG\"", "python -m pipeline cache-key ${{ inputs.legs }}")
        .replace("a26af69be951a213d495a4c3e4e4022e16d87065 # v5.6.0", "v5")
    )
    zizmor = subprocess.run([tool("zizmor"), "--offline", "--no-progress", str(bad)], capture_output=True, text=True)
    assert zizmor.returncode != 0
    assert "template-injection" in zizmor.stdout and "unpinned-uses" in zizmor.stdout
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace("runs-on: ubuntu-24.04\n    timeout-minutes: 15", "runs_on: ubuntu-24.04", 1))
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
    assert 'nox -s "$SESSION" --no-dependencies' in values
    assert "nox -s resolve" in values
    assert 'python -m pipeline cache-key "$LEG"' in values
    assert 'python -m pipeline cache-save "$LEG"' in values
    assert "python -m pipeline matrix --github --resolved out/resolved.json" in values
    assert "nox -s prune -- --apply" in values
    assert "python -m pipeline report" in values
    assert "nox -s publish -- --apply" in values
    assert "python -m pipeline alert --apply" in values
    assert "python -m pipeline release-exists --resolved out/resolved.json" in values


def test_every_action_is_pinned_to_a_commit_with_its_version() -> None:
    uses = [line.split("uses:", 1)[1].strip() for line in lines() if re.match(r"^\s*(?:-\s+)?uses:", line)]
    assert len(uses) >= 10
    for value in uses:
        assert re.match(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$", value), value
    used = {value.split("@")[0] for value in uses}
    assert used == {
        "actions/checkout",
        "actions/setup-python",
        "actions/cache",
        "actions/cache/restore",
        "actions/cache/save",
        "actions/upload-artifact",
        "actions/download-artifact",
    }


def test_permissions_are_empty_at_the_top_and_minimal_per_job() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert re.search(r"^permissions: \{\}$", text, re.MULTILINE)
    jobs = re.split(r"^  (?=[a-z][\w-]*:$)", text.split("\njobs:\n", 1)[1], flags=re.MULTILINE)
    jobs = [j for j in jobs if j.strip()]
    assert [j.split(":", 1)[0] for j in jobs] == ["resolve", "build", "summary", "publish", "alert", "prune"]
    special = {
        "prune": {"contents": "read", "actions": "write"},
        # The only job that may write the repository's contents (the release) ...
        "publish": {"contents": "write"},
        # ... and the only one that may touch issues.
        "alert": {"contents": "read", "issues": "write"},
    }
    for job in jobs:
        name = job.split(":", 1)[0]
        perms = re.search(r"^    permissions:\n((?:      .*\n)+)", job, re.MULTILINE)
        assert perms, f"job {name} has no permissions block"
        granted = {m.group(1): m.group(2) for m in re.finditer(r"^      (\w[\w-]*): (\w+)", perms.group(1), re.MULTILINE)}
        assert granted == special.get(name, {"contents": "read"}), name


def job_text(name: str) -> str:
    text = WORKFLOW.read_text(encoding="utf-8").split("\njobs:\n", 1)[1]
    return next(j for j in re.split(r"^  (?=[a-z][\w-]*:$)", text, flags=re.MULTILINE) if j.split(":", 1)[0] == name)


def step_if(job: str, step_name: str) -> str:
    match = re.search(r"- name: " + re.escape(step_name) + r"\n(?:        .*\n)*?        if: (.*)\n", job_text(job))
    assert match, f"{job}: step {step_name!r} has no if"
    return match.group(1)


def test_the_cache_is_decided_and_saved_also_after_a_failed_or_timed_out_build() -> None:
    assert step_if("build", "Evict stale entries, decide whether to save").startswith("always()")
    assert step_if("build", "Save ccache").startswith("always() && steps.decide.outputs.save == 'true'")
    build = job_text("build")
    step_limit = int(re.search(r"- name: Build\n(?:        .*\n)*?        timeout-minutes: (\d+)", build).group(1))
    job_limit = int(re.search(r"^    timeout-minutes: (\d+)", build, re.MULTILINE).group(1))
    assert step_limit < job_limit  # a timed-out build still leaves the job time to save


def test_publish_runs_once_per_tag_and_builds_are_skipped_when_the_release_exists() -> None:
    publish = job_text("publish")
    assert "group: publish-${{ needs.resolve.outputs.tag }}" in publish
    assert "cancel-in-progress: false" in publish
    assert "inputs.publish" in publish
    assert "if: needs.resolve.outputs.build == 'true'" in job_text("build")
    assert "PIPELINE_FORCE: ${{ inputs.force }}" in job_text("resolve")
    assert "needs.resolve.outputs.build == 'true'" in publish
    # The jobs that read the builds' records do not run (and fail) when nothing was built.
    assert "needs.resolve.outputs.build == 'true'" in job_text("summary")


def test_inputs_reach_steps_only_through_env() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    for name in ("rocm", "tag", "legs"):
        pattern = r"^\s*([\w-]+): \$\{\{ inputs\." + name + r" \}\}$"
        uses_of_input = re.findall(pattern, text, re.MULTILINE)
        assert uses_of_input and all(var.startswith("PIPELINE_") for var in uses_of_input), name


def test_the_source_is_made_once_and_handed_to_every_leg() -> None:
    text = WORKFLOW.read_text()
    assert "python -m pipeline source --resolved out/resolved.json" in run_values()
    resolve_job = text.split("\n  build:\n")[0]
    build_job = text.split("\n  build:\n")[1].split("\n  summary:\n")[0]
    assert "name: source\n          path: out/source/" in resolve_job
    assert "source: ${{ steps.source.outputs.archive }}" in resolve_job
    assert "PIPELINE_SOURCE: out/source/${{ needs.resolve.outputs.source }}" in build_job
    # Downloaded before the build step runs.
    assert build_job.index("name: source\n          path: out/source") < build_job.index('nox -s "$SESSION"')
