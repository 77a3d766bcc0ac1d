"""``python -m pipeline verify``: a downloaded bundle against the release's SHA256SUMS and SBOM.

The bundle is made by the pipeline's own packaging; the tampered copies are
rewritten here with tarfile (a changed file, an added one, a removed one),
and SHA256SUMS is written as ``sha256sum`` writes it.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from pipeline.names import SBOM_SUFFIX
from tests.support.pipeline_cli import run_pipeline
from tests.support.small_bundle import small_bundle

pytestmark = pytest.mark.integration

TOP = "llama-b100"


def rewrite(
    bundle: Path,
    dest: Path,
    *,
    change: dict[str, bytes] | None = None,
    add: dict[str, bytes] | None = None,
    drop: tuple[str, ...] = (),
) -> Path:
    """A copy of the tar.gz bundle with members changed, added or dropped (paths below the top folder)."""
    change, add = change or {}, add or {}
    with tarfile.open(bundle) as src, tarfile.open(dest, "w:gz") as out:
        for member in src.getmembers():
            rel = member.name.partition("/")[2]
            if rel in drop:
                continue
            if member.isfile():
                fh = src.extractfile(member)
                assert fh is not None
                data = change.get(rel, fh.read())
                member.size = len(data)
                out.addfile(member, io.BytesIO(data))
            else:
                out.addfile(member)
        for rel, data in add.items():
            info = tarfile.TarInfo(f"{TOP}/{rel}")
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    return dest


def sums_file(folder: Path, *paths: Path) -> Path:
    sums = folder / "SHA256SUMS"
    sums.write_text("".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in paths))
    return sums


def verify(*args: str | Path) -> tuple[int, str]:
    proc = run_pipeline(["verify", *map(str, args)], env={})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def release(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bundle, its SBOM beside it and SHA256SUMS over both, as the release publishes them."""
    bundle = small_bundle(tmp_path / "made")
    sbom = bundle.with_name(bundle.name + SBOM_SUFFIX)
    return bundle, sbom, sums_file(bundle.parent, bundle, sbom)


def test_an_untouched_bundle_verifies_and_the_provenance_command_is_printed(
    release: tuple[Path, Path, Path],
) -> None:
    bundle, sbom, sums = release
    code, out = verify(bundle, "--sums", sums, "--sbom", sbom, "--repo", "octo/llama")
    assert code == 0, out
    assert f"{bundle}: verified: 6 files against {sbom}, sha256 against {sums}" in out
    assert f"gh attestation verify {bundle} --repo octo/llama" in out
    # Without --sbom the copy inside the bundle is used.
    code, out = verify(bundle)
    assert code == 0, out


def test_a_tampered_file_is_named(release: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, sbom, _ = release
    bad = rewrite(bundle, tmp_path / bundle.name, change={"llama-cli": b"ELF cli with a backdoor"})
    code, out = verify(bad, "--sbom", sbom)
    assert code == 1, out
    digest = hashlib.sha256(b"ELF cli with a backdoor").hexdigest()
    assert f"error: llama-cli: sha256 {digest} differs from the SBOM's" in out
    assert out.count("error:") == 1
    # The release's SHA256SUMS no longer holds for the archive either.
    code, out = verify(bad, "--sums", sums_file(tmp_path, bundle), "--sbom", sbom)
    assert code == 1 and f"error: {bundle.name}: sha256 " in out and "differs from SHA256SUMS's" in out


def test_an_added_file_is_named(release: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, sbom, _ = release
    bad = rewrite(bundle, tmp_path / bundle.name, add={"libevil.so": b"ELF evil"})
    code, out = verify(bad, "--sbom", sbom)
    assert code == 1, out
    assert "error: libevil.so: in the bundle, not listed in the SBOM" in out
    assert out.count("error:") == 1


def test_a_removed_file_is_named(release: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, _, _ = release
    bad = rewrite(bundle, tmp_path / bundle.name, drop=("libllama.so",))
    code, out = verify(bad)
    assert code == 1, out
    assert "error: libllama.so: listed in the SBOM, missing from the bundle" in out


def test_an_sbom_swapped_inside_the_bundle_or_on_the_release_is_caught(
    release: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    bundle, sbom, sums = release
    forged = tmp_path / sbom.name
    forged.write_bytes(sbom.read_bytes().replace(b'"version": "b100"', b'"version": "b101"', 1))
    code, out = verify(bundle, "--sums", sums, "--sbom", forged)
    assert code == 1, out
    assert f"error: sbom.cdx.json: the bundle's SBOM differs from {forged.name}" in out
    assert f"error: {forged.name}: sha256 " in out


def test_bad_arguments_are_one_line_each(release: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, _, _ = release
    bad_sums = tmp_path / "SUMS"
    bad_sums.write_text("not a line\n")
    assert verify(bundle, "--sums", bad_sums)[0] == 2
    code, out = verify(tmp_path / "absent.tar.gz")
    assert code == 2 and "absent.tar.gz: no such bundle" in out
    not_json = tmp_path / "x.cdx.json"
    not_json.write_text("{}")
    code, out = verify(bundle, "--sbom", not_json)
    assert code == 9 and "not a CycloneDX SBOM" in out


def test_sha256sums_naming_the_bundle_twice_fails_whichever_line_is_right(
    release: tuple[Path, Path, Path],
) -> None:
    """A wrong digest first and the right one after: ``sha256sum -c`` fails on the first line, and so must verify."""
    bundle, sbom, sums = release
    wrong = "0" * 64
    for order in ((wrong, None), (None, wrong)):
        right = hashlib.sha256(bundle.read_bytes()).hexdigest()
        sums.write_text("".join(f"{digest or right}  {bundle.name}\n" for digest in order))
        code, out = verify(bundle, "--sums", sums, "--sbom", sbom)
        assert code == 1, out
        assert f"error: {bundle.name}: listed 2 times in SHA256SUMS (lines 1, 2)" in out
        assert "verified" not in out


def test_an_sbom_listing_a_file_twice_fails(release: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """The second entry (another digest) beside the true one: either could be the one checked, so neither is."""
    import json

    bundle, sbom, _ = release
    data = json.loads(sbom.read_bytes())
    [cli] = [c for c in data["components"] if c.get("name") == "llama-cli"]
    data["components"].append(
        {**cli, "bom-ref": "file:llama-cli#2", "hashes": [{"alg": "SHA-256", "content": "1" * 64}]}
    )
    forged_bytes = json.dumps(data, indent=2).encode()
    forged = tmp_path / sbom.name
    forged.write_bytes(forged_bytes)
    # The same SBOM inside the bundle and beside it: the duplicate is the only thing wrong.
    bad = rewrite(bundle, tmp_path / bundle.name, change={"sbom.cdx.json": forged_bytes})
    for args in ((bad,), (bad, "--sbom", forged)):
        code, out = verify(*args)
        assert code == 9, out
        assert out.strip().splitlines()[-1].endswith("the SBOM lists llama-cli twice"), out
