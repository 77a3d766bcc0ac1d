"""A run's output folder and a publish against the fake GitHub, for the release tests.

``make_run`` writes what the workflow downloads before ``publish``: one record
per leg and real tar.gz bundles of random bytes (so two runs differ);
and the run's source archive, made by the pipeline from a small tree;
``publish`` runs ``python -m pipeline publish`` on it; ``assert_release_complete``
checks the release with the real ``sha256sum -c``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.backends import bundle_file_name
from pipeline.inputs.matrix import load_matrix
from pipeline.source.archive import write_source_archive
from tests.support.fake_github import FakeGitHub
from tests.support.gitrepos import commit_files, init_repo
from tests.support.pipeline_cli import ROOT, run_pipeline

REPO = "octo/llama"
TOKEN = "ghs_publish_secret_0123456789"
TAG = "b7000"
MATRIX = ROOT / "matrix.toml"
# Every leg of matrix.toml: a run of some of them is a partial release.
LEGS = tuple(load_matrix(MATRIX).legs)
# Every leg's bundle, the source archive and SHA256SUMS.
ASSETS = len(LEGS) + 2
SOURCE_ASSET = "llama.cpp-source-b7000.tar.gz"
COMMIT = "0c1e570" + "0" * 33
# A run of five legs (one per kind of bundle name), for the tests that count a publish's requests.
FIVE_LEGS_MATRIX = Path(__file__).resolve().parent / "data" / "five_legs.toml"
FIVE_LEGS = tuple(load_matrix(FIVE_LEGS_MATRIX).legs)


def make_run(
    out: Path, *, failed: tuple[str, ...] = (), legs: tuple[str, ...] = LEGS, matrix: Path = MATRIX
) -> dict[str, Path]:
    """A run's output folder as the workflow downloads it: records in OUT/<leg>/, bundles in OUT/dist/."""
    bundles: dict[str, Path] = {}
    declared = load_matrix(matrix)
    for i, leg in enumerate(legs):
        name = bundle_file_name(declared.leg(leg), TAG)
        record: dict[str, Any] = {
            "leg": leg,
            "backend": leg.split("-")[0],
            "os": "linux",
            "started": "2026-08-10T09:17:00+00:00",
            "status": "failed" if leg in failed else "success",
            "wall_seconds": 100.0 + i,
            "source": {"tag": TAG, "base_tag": TAG, "commit": COMMIT, "mix": []},
            "toolchain": {"identity": f"{leg}-toolchain"},
            "ccache": {"hit_rate": 0.25 * i},
            "bundle": None if leg in failed else f"dist/{name}",
        }
        (out / leg).mkdir(parents=True)
        (out / leg / "record.json").write_text(json.dumps(record))
        if leg in failed:
            continue
        payload = out / "payload" / leg / "bin" / "llama-cli"
        payload.parent.mkdir(parents=True)
        payload.write_bytes(os.urandom(4096) + leg.encode())
        (out / "dist").mkdir(exist_ok=True)
        with tarfile.open(out / "dist" / name, "w:gz") as tar:
            tar.add(payload, arcname=f"bin/llama-cli-{leg}")
        bundles[name] = out / "dist" / name
    write_source(out)
    return bundles


def write_source(out: Path) -> Path:
    """The run's source archive where `source` writes it (OUT/source/), made by the pipeline from a small tree."""
    tree = out / "tree"
    init_repo(tree)
    commit_files(
        tree,
        {"CMakeLists.txt": "project(llama)\n", "LICENSE": "MIT\n"},
        "llama.cpp",
        when=datetime(2026, 8, 10, 9, 0, tzinfo=UTC),
    )
    archive, _ = write_source_archive(tree, out / "source", tag=TAG, source={"tag": TAG}, environ=os.environ)
    return archive


def env_for(gh: FakeGitHub, *, legs: tuple[str, ...] = LEGS, **extra: str) -> dict[str, str]:
    return {
        "GITHUB_TOKEN": TOKEN,
        "GH_TOKEN": "",
        "PIPELINE_HTTP_BACKOFF": "0",
        "PIPELINE_LEGS": ",".join(legs),
        **extra,
    }


def publish(
    gh: FakeGitHub, out: Path, *args: str, matrix: Path = MATRIX, legs: tuple[str, ...] = LEGS, **env: str
) -> subprocess.CompletedProcess[str]:
    return run_pipeline(
        [
            "--matrix",
            str(matrix),
            "publish",
            "--repo",
            REPO,
            "--api-url",
            gh.api_url,
            "--out",
            str(out),
            *args,
        ],
        env=env_for(gh, legs=legs, **env),
    )


def assert_release_complete(gh: FakeGitHub, bundles: dict[str, Path], tmp: Path) -> None:
    release = gh.release(TAG)
    assert release is not None and release["draft"] is False
    assert [r["tag_name"] for r in gh.releases] == [TAG]  # never a second release for one tag
    assert gh.asset_names(TAG) == sorted([*bundles, SOURCE_ASSET, "SHA256SUMS"])
    by_name = {a["name"]: a for a in release["assets"]}
    assert all(a["state"] == "uploaded" for a in by_name.values())
    check = tmp / "check"
    check.mkdir()
    for name, asset in by_name.items():
        (check / name).write_bytes(gh.asset_bytes[asset["id"]])
    for name, path in bundles.items():
        assert (check / name).read_bytes() == path.read_bytes()
    # The real sha256sum vouches for SHA256SUMS and every uploaded bundle.
    proc = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=check, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": OK") == len(bundles) + 1  # and the source archive
    # The source its bundles were built from, byte for byte.
    out = next(iter(bundles.values())).parents[1]  # OUT/dist/<bundle>
    assert (check / SOURCE_ASSET).read_bytes() == (out / "source" / f"llama.cpp-{TAG}.tar.gz").read_bytes()
