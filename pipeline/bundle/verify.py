"""``verify``: is a downloaded bundle what the release published?

Two checks, each against a file of the release:

- ``SHA256SUMS``: the archive's own sha256 against its line (and the SBOM's,
  when the SBOM beside it is given and listed);
- the SBOM (``<bundle>.cdx.json`` beside it on the release, else the copy
  inside the bundle): every file it lists is in the bundle with the same
  sha256 (a symlink with the same target), and the bundle holds nothing it
  does not list (the SBOM inside the bundle, which cannot list itself,
  aside). Given an SBOM, the copy inside the bundle must be the same bytes.

SHA256SUMS is checked first: an archive whose sha256 differs is not
unpacked, the difference is the answer. Every difference is one line naming
the file. The build provenance is checked by GitHub's CLI (``gh attestation
verify``), whose command line is printed once the bundle verified: it needs
GitHub's attestation store, which only ``gh`` talks to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pipeline.archives.deterministic import MANIFEST_MEMBER, Member, read_members
from pipeline.bundle.authenticode import PeSignature, verify_tree
from pipeline.bundle.make import manifest_root, parse_manifest
from pipeline.bundle.sbom import SBOM_NAME, SbomFile, sbom_files
from pipeline.bundle.signing import declared_publisher
from pipeline.errors import BundleError, ToolchainError, UsageError
from pipeline.util import json_text
from pipeline.util.fsutil import file_digest

_SUMS_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


@dataclass(frozen=True, kw_only=True)
class Difference:
    path: str
    # "changed", "missing", "extra", "sums", "sbom"
    kind: str
    message: str

    @property
    def line(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True, kw_only=True)
class Verification:
    bundle: str
    files_checked: int
    differences: tuple[Difference, ...]
    # Where the SBOM came from: the file given, or the bundle's own copy.
    sbom: str
    sums: str | None
    # False when the archive's own sha256 already failed SHA256SUMS: its bytes are not what was
    # published, so they are not unpacked (a corrupted download is that, not a gzip CRC error).
    archive_read: bool = True
    # A Windows bundle's programs and libraries, each with its Authenticode signer (verify reports them all).
    signatures: tuple[PeSignature, ...] = ()
    # The publisher every signature had to name (--publisher, else the manifest's): None for an unsigned bundle.
    publisher: str | None = None

    @property
    def ok(self) -> bool:
        return not self.differences


def parse_sums(text: str, where: str) -> dict[str, list[tuple[int, str]]]:
    """``sha256sum`` lines -> {name: [(line number, sha256), ...]}; UsageError naming ``where`` and the line
    when one is not one. A name listed twice keeps both lines: ``sha256sum -c`` checks each of them."""
    sums: dict[str, list[tuple[int, str]]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _SUMS_LINE.match(line)
        if not match:
            raise UsageError(f"{where}:{number}: not a sha256sum line: {line[:80]!r}")
        sums.setdefault(match.group(2), []).append((number, match.group(1).lower()))
    return sums


def attestation_command(bundle: Path, repo: str | None) -> str:
    """The ``gh`` command that checks the bundle's build provenance (GitHub artifact attestations)."""
    return f"gh attestation verify {bundle} --repo {repo or 'OWNER/REPO'}"


def _check_sums(path: Path, sums: Mapping[str, list[tuple[int, str]]], where: str) -> list[Difference]:
    lines = sums.get(path.name)
    if not lines:
        return [Difference(path=path.name, kind="sums", message=f"not listed in {where}")]
    if len(lines) > 1:
        # Which line counts is anyone's guess (the last, here, until this): a release lists each asset once.
        numbers = ", ".join(str(n) for n, _ in lines)
        return [
            Difference(
                path=path.name, kind="sums", message=f"listed {len(lines)} times in {where} (lines {numbers})"
            )
        ]
    expected = lines[0][1]
    digest = file_digest(path)[1]
    if digest != expected:
        return [
            Difference(
                path=path.name, kind="sums", message=f"sha256 {digest} differs from {where}'s {expected}"
            )
        ]
    return []


def compare_files(listed: Mapping[str, SbomFile], members: Mapping[str, Member]) -> list[Difference]:
    """Each difference between what the SBOM lists and what the bundle holds (paths relative to its root)."""
    found: list[Difference] = []
    for path in sorted(set(listed) | set(members)):
        want, got = listed.get(path), members.get(path)
        if got is None:
            found.append(
                Difference(path=path, kind="missing", message="listed in the SBOM, missing from the bundle")
            )
        elif want is None:
            found.append(Difference(path=path, kind="extra", message="in the bundle, not listed in the SBOM"))
        elif want.link is not None or got.link is not None:
            if want.link != got.link:
                found.append(
                    Difference(
                        path=path,
                        kind="changed",
                        message=f"symlink to {got.link!r}, the SBOM says {want.link!r}",
                    )
                )
        elif want.sha256 != got.sha256:
            found.append(
                Difference(
                    path=path,
                    kind="changed",
                    message=f"sha256 {got.sha256} differs from the SBOM's {want.sha256}",
                )
            )
    return found


def verify_bundle(
    bundle: Path,
    *,
    sums: Path | None = None,
    sbom: Path | None = None,
    publisher: str | None = None,
    signing_ca: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Verification:
    """Check ``bundle`` against the release's ``sums`` file and an SBOM (``sbom``, else the bundle's own); a
    Windows bundle's signatures too: every program and library is reported with its signer, and, when
    ``publisher`` is given or the manifest names one, each must be signed by it and verify (against the roots
    of ``signing_ca``, else the system's)."""
    if not bundle.is_file():
        raise UsageError(f"{bundle}: no such bundle")
    differences: list[Difference] = []
    given: bytes | None = None
    if sbom is not None:
        # Read (bounded) before the archive: a bad argument fails before any work.
        if not sbom.is_file():
            raise UsageError(f"--sbom {sbom}: no such file")
        given = json_text.read_bytes(sbom, where=str(sbom), what="the SBOM", error=BundleError)
    if sums is not None:
        if not sums.is_file():
            raise UsageError(f"--sums {sums}: no such file")
        raw_sums = json_text.read_bytes(sums, where=f"--sums {sums}", what="SHA256SUMS", error=UsageError)
        table = parse_sums(raw_sums.decode("utf-8", errors="replace"), str(sums))
        differences += (archive := _check_sums(bundle, table, sums.name))
        archive_differs = bundle.name in table and bool(archive)
        if sbom is not None and sbom.name in table:
            differences += _check_sums(sbom, table, sums.name)
        if archive_differs:
            return Verification(bundle=str(bundle), files_checked=0, differences=tuple(differences),
                                sbom=str(sbom) if sbom else "", sums=str(sums), archive_read=False)  # fmt: skip
    members: dict[str, Member] = {}
    kept: dict[str, bytes] = {}
    for member, data in read_members(bundle, keep=(MANIFEST_MEMBER, SBOM_NAME)):
        members[member.name] = member
        if data is not None:
            kept[member.name] = data
    manifest_at = next((n for n in kept if n.rsplit("/", 1)[-1] == MANIFEST_MEMBER), None)
    if manifest_at is None:
        raise BundleError(f"{bundle}: foreign bundle: no {MANIFEST_MEMBER} inside")
    manifest = parse_manifest(kept[manifest_at], f"{bundle}:{manifest_at}")
    top = manifest_root(manifest)
    prefix = f"{top}/" if top else ""
    outside = sorted(n for n in members if not n.startswith(prefix))
    if outside:
        raise BundleError(f"{bundle}: corrupt bundle: {outside[0]} is outside its top folder {top}/")
    inside = {name[len(prefix) :]: m for name, m in members.items()}
    own = kept.get(prefix + SBOM_NAME)
    inside.pop(SBOM_NAME, None)
    if sbom is not None and given is not None:
        raw, where = given, str(sbom)
        if own is not None and own != raw:
            differences.append(
                Difference(path=SBOM_NAME, kind="sbom", message=f"the bundle's SBOM differs from {sbom.name}")
            )
        elif own is None:
            differences.append(Difference(path=SBOM_NAME, kind="sbom", message="missing from the bundle"))
    elif own is not None:
        raw, where = own, f"{bundle}:{prefix}{SBOM_NAME}"
    else:
        raise BundleError(
            f"{bundle}: no {SBOM_NAME} inside and no --sbom given: nothing to verify the files against"
        )
    differences += compare_files(sbom_files(raw, where), inside)
    signatures: list[PeSignature] = []
    leg = manifest.get("leg")
    expected = publisher or declared_publisher(manifest)
    if isinstance(leg, dict) and leg.get("os") == "windows":
        try:
            signatures = _signatures(bundle, signing_ca, {} if environ is None else environ)
        except ToolchainError:
            if expected:
                raise
            # An unsigned bundle's signers are only reported: without osslsigncode there is nothing to report.
            signatures = []
        differences += [
            Difference(path=sig.file, kind="signature", message=problem)
            for sig in signatures
            if expected and (problem := sig.problem(expected))
        ]
    return Verification(
        bundle=str(bundle), files_checked=len(inside), differences=tuple(differences),
        sbom=where, sums=str(sums) if sums is not None else None, signatures=tuple(signatures), publisher=expected,
    )  # fmt: skip


def _signatures(bundle: Path, trusted: Path | None, environ: Mapping[str, str]) -> list[PeSignature]:
    """Each program and library of a Windows bundle with its signature, unpacked for osslsigncode to read."""
    import tempfile

    from pipeline.bundle.check import unpack_bundle

    with tempfile.TemporaryDirectory(prefix="verify-") as scratch:
        _, root = unpack_bundle(bundle, Path(scratch) / "bundle")
        return verify_tree(root, trusted=trusted, environ=environ)
