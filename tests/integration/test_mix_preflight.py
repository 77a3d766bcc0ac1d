"""The mix-pin preflight against real git repositories: kept, merged upstream (dropped), conflicting, gone."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.errors import SourceError
from pipeline.inputs.matrix import MixPin
from pipeline.inputs.resolution_file import SourceSpec
from pipeline.source.checkout import checkout_source
from pipeline.source.mix_merge import MixPreflight, preflight_mix
from tests.support.gitrepos import clone, commit_files, git, init_repo, tag
from tests.support.pipeline_cli import run_pipeline

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
REPO = "ggml-org/llama.cpp"
BASE = "".join(f"line {i}\n" for i in range(1, 21))


@dataclass
class Forge:
    upstream: Path
    template: str
    base_commit: str
    pins: dict[str, MixPin]


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> Forge:
    """b1, four pull requests branched from it, then upstream moves on and tags b2.

    Before b2, upstream merges PR 3 (a merge commit) and squashes PR 4's change into a
    commit of its own, and changes the lines PR 2 changes.
    """
    root = tmp_path_factory.mktemp("preflight")
    up = init_repo(root / "upstream")
    commit_files(up, {"a.txt": BASE, "b.txt": BASE}, "start", when=NOW - timedelta(hours=80))
    tag(up, "b1", when=NOW - timedelta(hours=80))
    fork = clone(up, root / "gh" / REPO)
    pins: dict[str, MixPin] = {}

    def pr(number: int, files: dict[str, str]) -> None:
        git(fork, "checkout", "--quiet", "-b", f"pr{number}", "b1")
        sha = commit_files(fork, files, f"PR {number}", when=NOW - timedelta(hours=70))
        pins[f"pr{number}"] = MixPin(repo=REPO, number=number, sha=sha)
        git(fork, "checkout", "--quiet", "master")

    pr(1, {"new.txt": "a new file\n"})
    pr(
        2,
        {
            "a.txt": BASE.replace("line 3\n", "line 3 from PR 2\n"),
            "b.txt": BASE.replace("line 9\n", "PR 2\n"),
        },
    )
    pr(3, {"c.txt": "PR 3\n"})
    pr(4, {"a.txt": BASE.replace("line 18\n", "line 18 from PR 4\n")})
    # Upstream: PR 3 merged as it is, PR 4 squashed, PR 2's lines changed otherwise.
    git(up, "fetch", "--quiet", str(fork), "pr3:pr3")
    git(up, "merge", "--quiet", "--no-ff", "-m", "Merge PR 3", "pr3", when=NOW - timedelta(hours=60))
    commit_files(
        up,
        {"a.txt": BASE.replace("line 18\n", "line 18 from PR 4\n")},
        "PR 4 (squashed)",
        when=NOW - timedelta(hours=50),
    )
    commit_files(
        up,
        {
            "a.txt": BASE.replace("line 3\n", "line 3 upstream\n").replace(
                "line 18\n", "line 18 from PR 4\n"
            ),
            "b.txt": BASE.replace("line 9\n", "upstream\n"),
        },
        "upstream",
        when=NOW - timedelta(hours=40),
    )
    tag(up, "b2", when=NOW - timedelta(hours=40))
    return Forge(
        upstream=up,
        template=f"file://{root / 'gh'}/{{repo}}",
        base_commit=git(up, "rev-parse", "b2"),
        pins=pins,
    )


def spec(forge: Forge, *names: str, extra: tuple[MixPin, ...] = ()) -> SourceSpec:
    return SourceSpec(
        repo=str(forge.upstream),
        base_tag="b2",
        base_commit=forge.base_commit,
        mix=tuple(forge.pins[n] for n in names) + extra,
    )


def preflight(forge: Forge, s: SourceSpec, dest: Path) -> MixPreflight:
    return preflight_mix(s, dest, git_url_template=forge.template, environ=os.environ)


def test_pins_that_merge_are_kept_and_the_merge_follows(forge: Forge, tmp_path: Path) -> None:
    result = preflight(forge, spec(forge, "pr1"), tmp_path / "src")
    assert result.dropped == () and result.spec.mix == (forge.pins["pr1"],)
    head = checkout_source(result.spec, tmp_path / "src", git_url_template=forge.template, environ=os.environ)
    assert (tmp_path / "src" / "new.txt").read_text() == "a new file\n"
    assert git(tmp_path / "src", "rev-parse", "HEAD^1") == forge.base_commit and head != forge.base_commit


def test_a_pull_request_merged_upstream_is_dropped_merge_commit_or_squash(
    forge: Forge, tmp_path: Path
) -> None:
    result = preflight(forge, spec(forge, "pr3", "pr1", "pr4"), tmp_path / "src")
    assert result.spec.mix == (forge.pins["pr1"],)
    assert [(p.number, why) for p, why in result.dropped] == [
        (3, f"its commit {forge.pins['pr3'].sha[:12]} is already in b2 (merged upstream)"),
        (4, "merging it onto b2 changes nothing (merged upstream)"),
    ]
    # The tag names the mix that is merged: the dropped pins do not count.
    assert result.spec.tag == spec(forge, "pr1").tag


def test_every_pin_dropped_builds_the_tag_itself(forge: Forge, tmp_path: Path) -> None:
    result = preflight(forge, spec(forge, "pr3"), tmp_path / "src")
    assert result.spec.mix == () and result.spec.tag == "b2" and result.spec.commit == forge.base_commit


def test_a_conflict_is_one_error_naming_the_pull_request_and_the_paths(forge: Forge, tmp_path: Path) -> None:
    with pytest.raises(SourceError) as err:
        preflight(forge, spec(forge, "pr1", "pr2"), tmp_path / "src")
    assert err.value.message == (
        f"mix pin {REPO}#2 ({forge.pins['pr2'].sha[:12]}) does not merge onto b2: conflicts in a.txt, b.txt"
    )
    # Nothing was merged or checked out: the trial merge is in memory.
    assert not (tmp_path / "src" / "a.txt").exists()


def test_a_pinned_commit_that_is_gone_names_the_pull_request(forge: Forge, tmp_path: Path) -> None:
    ghost = MixPin(repo=REPO, number=9, sha="0123456789abcdef0123456789abcdef01234567")
    with pytest.raises(
        SourceError, match=rf"mix pin {REPO}#9: commit 0123456789abcdef0123456789abcdef01234567 not found"
    ):
        preflight(forge, spec(forge, extra=(ghost,)), tmp_path / "src")


def test_the_source_command_drops_with_a_step_summary_warning_and_archives_the_rest(
    forge: Forge, tmp_path: Path
) -> None:
    pins = "".join(
        f'\n[[source.mix]]\nrepo = "{REPO}"\nnumber = {p.number}\nsha = "{p.sha}"\n'
        for p in (forge.pins["pr1"], forge.pins["pr3"])
    )
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        f'[source]\nrepo = "{forge.upstream}"\ntag = "b2"\n{pins}\n[legs.cpu]\nbackend = "cpu"\nos = "linux"\n'
    )
    summary = tmp_path / "summary.md"
    proc = run_pipeline(
        ["--matrix", str(matrix), "source", "--out", str(tmp_path / "out"), "--now", "2026-03-14T12:00:00Z"],
        env={
            "PIPELINE_GIT_URL_TEMPLATE": forge.template,
            "GITHUB_ACTIONS": "true",
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(tmp_path / "output"),
        },
    )
    assert proc.returncode == 0, proc.stderr
    warning = f"mix pin {REPO}#3 dropped: its commit {forge.pins['pr3'].sha[:12]} is already in b2 (merged upstream)"
    assert f"::warning::{warning}" in proc.stderr
    assert summary.read_text() == f"- :warning: {warning}\n"
    manifest = json.loads(proc.stdout)
    assert manifest["tag"] == spec(forge, "pr1").tag
    assert [p["number"] for p in manifest["source"]["mix"]] == [1]
