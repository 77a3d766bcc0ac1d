"""`check-bundle` on archives someone else wrote: zipfile.writestr's modes, and members it cannot place."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from pipeline.bundle.make import FORMAT, FORMAT_VERSION
from pipeline.errors import BundleError
from tests.support.archives import make_tar, tar_file, tar_hardlink
from tests.support.pipeline_cli import run_pipeline

pytestmark = pytest.mark.integration


def manifest(os_name: str) -> bytes:
    return json.dumps({"format": FORMAT, "format_version": FORMAT_VERSION, "files": [],
                       "leg": {"name": "w", "os": os_name}}).encode()


def check(bundle: Path) -> subprocess.CompletedProcess[str]:
    return run_pipeline(["check-bundle", str(bundle), "--no-smoke"], env={})


def test_a_zip_written_by_zipfile_writestr_is_accepted(tmp_path: Path) -> None:
    bundle = tmp_path / "llama-b1-bin-win-cpu-x64.zip"
    with zipfile.ZipFile(bundle, "w") as zf:
        # writestr with a bare name stores 0o600 << 16: permission bits, no file-type bits.
        zf.writestr("manifest.json", manifest("windows"))
        zf.writestr("LICENSE", b"MIT\n")
        zf.writestr("bin/readme.txt", b"hello\n")
    with zipfile.ZipFile(bundle) as zf:
        assert {i.external_attr >> 16 for i in zf.infolist()} == {0o600}
    proc = check(bundle)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # Unpacked and read: its one problem is that it holds no program or library to examine.
    assert [line for line in out.splitlines() if line.startswith("error:")] == [
        "error: .: no .exe/.dll program or library at the bundle's root: nothing was checked"]
    assert proc.returncode == 1, out
    assert "check-bundle failed (1 problem): 0 binaries" in out


def test_a_bundle_with_a_hard_link_to_a_missing_member_is_one_error_line(tmp_path: Path) -> None:
    bundle = make_tar(tmp_path / "llama-b1-bin-ubuntu-x64.tar.gz", [
        tar_file("manifest.json", manifest("linux")), tar_file("LICENSE", b"MIT\n"),
        tar_hardlink("bin/llama-cli", "bin/missing"),
    ])
    proc = check(bundle)
    assert proc.returncode == BundleError.exit_code, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {bundle}: cannot unpack: {bundle.name}: refused member 'bin/llama-cli': "
        "hard link to 'bin/missing', which is no earlier member; nothing was installed"
    ]
