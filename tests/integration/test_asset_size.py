"""A bundle against GitHub's limit per release asset (2 GiB): refused over it, before any request; warned near it.

The oversized bundles are real tar.gz archives (read back by the pipeline's
own reader) made to weigh 2 GiB on disk by a sparse run of zeros after the
gzip stream, which gzip readers skip: nothing writes 2 GiB. A zip's listing
(a Windows bundle) is read from its central directory, tested at its real size.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from pipeline.bundle.asset_size import check_asset_size, largest_files, near_limit_warning, oversize_problem
from pipeline.errors import BundleError
from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import run_pipeline
from tests.support.release_runs import MATRIX, REPO, TOKEN, make_run, publish

pytestmark = pytest.mark.integration

GIB = 1024**3
# GitHub's documented limit ("Each file included in a release must be under 2 GiB"), written out here.
LIMIT = 2 * GIB
# Six files of distinct sizes: the five largest are named, the smallest is not.
FILES = {
    "llama/lib/libggml-hip.so": 70_000,
    "llama/lib/libhipblaslt.so": 50_000,
    "llama/lib/librocblas.so": 40_000,
    "llama/lib/libamdhip64.so": 30_000,
    "llama/bin/llama-server": 20_000,
    "llama/LICENSE": 1_000,
}
LARGEST_FIVE = [
    "llama/lib/libggml-hip.so",
    "llama/lib/libhipblaslt.so",
    "llama/lib/librocblas.so",
    "llama/lib/libamdhip64.so",
    "llama/bin/llama-server",
]


def tar_gz_bytes() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, size in FILES.items():
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(os.urandom(size)))
    return buf.getvalue()


def zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, size in FILES.items():
            zf.writestr(name, os.urandom(size))
    return buf.getvalue()


def sized_bundle(path: Path, total: int) -> Path:
    """A real tar.gz bundle of ``total`` bytes on disk: the archive, then a sparse run of zeros."""
    data = tar_gz_bytes()
    with path.open("wb") as fh:
        fh.write(data)
        fh.truncate(total)
    assert path.stat().st_size == total
    return path


def test_a_bundle_at_the_limit_is_refused_with_its_size_and_five_largest_files(tmp_path: Path) -> None:
    name = "llama-b7000-bin-ubuntu-rocm-gfx110X-x64.tar.gz"
    bundle = sized_bundle(tmp_path / name, LIMIT)
    assert [n for n, _ in largest_files(bundle)] == LARGEST_FIVE
    problem = oversize_problem("rocm-linux-gfx110X", bundle)
    assert problem is not None
    assert problem.startswith(
        f"leg rocm-linux-gfx110X: {name} is 2.0 GiB (2147483648 bytes), not under GitHub's 2.0 GiB"
    )
    for file in LARGEST_FIVE:
        assert file in problem
    assert "llama/LICENSE" not in problem
    assert "\n" not in problem
    with pytest.raises(BundleError, match=r"not under GitHub's 2\.0 GiB limit"):
        check_asset_size("rocm-linux-gfx110X", bundle)


def test_a_zip_bundles_largest_files_come_from_its_central_directory(tmp_path: Path) -> None:
    """A Windows bundle (zip): the same five, read from the zip's own listing."""
    bundle = tmp_path / "llama-b7000-bin-win-hip-x64.zip"
    bundle.write_bytes(zip_bytes())
    assert largest_files(bundle) == [(name, FILES[name]) for name in LARGEST_FIVE]


def test_a_byte_under_the_limit_passes_and_80_percent_warns(tmp_path: Path) -> None:
    under = sized_bundle(tmp_path / "under.tar.gz", LIMIT - 1)
    assert oversize_problem("cuda", under) is None
    warning = check_asset_size("cuda", under)
    assert warning is not None and "100% of GitHub's 2.0 GiB" in warning
    at_80 = sized_bundle(tmp_path / "at80.tar.gz", int(LIMIT * 0.8) + 1)
    warning = near_limit_warning("cuda", at_80)
    assert warning is not None and "80% of GitHub's" in warning and LARGEST_FIVE[0] in warning
    below = sized_bundle(tmp_path / "below.tar.gz", int(LIMIT * 0.8) - 1)
    assert check_asset_size("cuda", below) is None


def test_publish_refuses_an_oversized_bundle_before_any_request(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bundles = make_run(out)
    leg, path = "vulkan", next(p for name, p in bundles.items() if "-vulkan-" in name)
    sized_bundle(path, LIMIT + 4096)
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = publish(gh, out, "--apply")
        assert gh.requests == []
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"leg {leg}: {path.name} is 2.0 GiB (2147487744 bytes)" in lines[0]
    assert LARGEST_FIVE[0] in lines[0] and "nothing was uploaded" in lines[0]
    assert "Traceback" not in proc.stderr
    # Nothing was written for the release either: the check comes before SHA256SUMS.
    assert not (out / "release" / "SHA256SUMS").exists()


def test_cache_budget_lists_the_runs_bundles_and_warns_from_80_percent(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bundles = make_run(out, legs=("cpu", "vulkan"))
    sized_bundle(next(p for name, p in bundles.items() if "-vulkan-" in name), int(LIMIT * 0.85))
    args = ["--matrix", str(MATRIX), "cache-budget", "--out", str(out)]
    proc = run_pipeline(args, env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 0, proc.stderr
    # An annotation's text escapes "%" as "%25".
    about_assets = [
        ln.replace("%25", "%")
        for ln in proc.stderr.splitlines()
        if ln.startswith("::warning") and "release asset" in ln
    ]
    assert len(about_assets) == 1, proc.stderr
    assert (
        "leg vulkan:" in about_assets[0]
        and "85% of GitHub's 2.0 GiB limit per release asset" in about_assets[0]
    )
    assert "against GitHub's 2.0 GiB per release asset" in proc.stdout
    data = json.loads(run_pipeline([*args, "--json"]).stdout)
    assert data["bundles"]["vulkan"]["bytes"] == int(LIMIT * 0.85)
    assert data["release_asset_limit_bytes"] == LIMIT
