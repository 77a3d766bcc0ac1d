"""``verify --sums`` checks the download's sha256 before it reads the archive, and says so in one line.

A download cut short or flipped on the way is a gzip stream with a bad CRC:
unpacking it first would report gzip's complaint, not that the file is not
the one the release lists.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pipeline.names import SBOM_SUFFIX
from tests.support.pipeline_cli import run_pipeline
from tests.support.small_bundle import small_bundle

pytestmark = pytest.mark.integration


def verify(*args: str | Path) -> tuple[int, str, str]:
    proc = run_pipeline(["verify", *map(str, args)], env={})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def published(tmp_path: Path) -> tuple[Path, Path, Path]:
    bundle = small_bundle(tmp_path / "made")
    sbom = bundle.with_name(bundle.name + SBOM_SUFFIX)
    sums = bundle.parent / "SHA256SUMS"
    sums.write_text(
        "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in (bundle, sbom))
    )
    return bundle, sbom, sums


def test_a_corrupted_download_differs_from_sha256sums_and_is_not_unpacked(tmp_path: Path) -> None:
    bundle, sbom, sums = published(tmp_path)
    listed = hashlib.sha256(bundle.read_bytes()).hexdigest()
    data = bytearray(bundle.read_bytes())
    # A byte flipped inside the deflate stream (past gzip's 10-byte header): the CRC no longer holds.
    data[len(data) // 2] ^= 0xFF
    bundle.write_bytes(bytes(data))
    code, out, err = verify(bundle, "--sums", sums, "--sbom", sbom, "--repo", "octo/llama")
    assert code == 1, out + err
    got = hashlib.sha256(bytes(data)).hexdigest()
    assert out.splitlines() == [
        f"error: {bundle.name}: sha256 {got} differs from SHA256SUMS's {listed}",
        f"{bundle}: 1 difference: sha256 against {sums}; the archive was not read",
    ]
    # No gzip complaint, and no provenance hint for bytes that are not the release's.
    assert "CRC" not in out + err and "gh attestation" not in out + err


def test_two_differences_are_plural_and_a_failure_prints_no_provenance_hint(tmp_path: Path) -> None:
    bundle, sbom, sums = published(tmp_path)
    sbom.write_bytes(sbom.read_bytes().replace(b'"version": "b100"', b'"version": "b101"', 1))
    code, out, _ = verify(bundle, "--sums", sums, "--sbom", sbom)
    assert code == 1
    # The SBOM's sha256 against SHA256SUMS, and the bundle's own copy against it.
    assert f"{bundle}: 2 differences: " in out
    assert "gh attestation" not in out


def test_one_difference_is_singular(tmp_path: Path) -> None:
    bundle, _, sums = published(tmp_path)
    other = tmp_path / "other.cdx.json"
    other.write_bytes((bundle.with_name(bundle.name + SBOM_SUFFIX)).read_bytes().replace(b"b100", b"b101", 1))
    code, out, _ = verify(bundle, "--sums", sums, "--sbom", other)
    assert code == 1
    assert f"{bundle}: 1 difference: " in out and "1 differences" not in out
