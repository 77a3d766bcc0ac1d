"""``python -m pipeline verify BUNDLE``: is a downloaded bundle what the release published?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs

_EPILOG = """\
Download the bundle, SHA256SUMS and the SBOM beside it (<bundle>.cdx.json)
from the release, then:

  python -m pipeline verify llama-b1-bin-ubuntu-x64.tar.gz \\
      --sums SHA256SUMS --sbom llama-b1-bin-ubuntu-x64.tar.gz.cdx.json

--sums checks the archive's sha256 (and the SBOM's) against SHA256SUMS.
The SBOM (--sbom, else the copy inside the bundle) must list every file of
the bundle with its sha256, and the bundle must hold nothing else. Each
difference is one line naming the file. An archive whose sha256 differs
from SHA256SUMS is not unpacked: that difference is the answer. Once the
bundle verified, it prints the `gh attestation verify` command that checks
its build provenance with GitHub.
Exit codes: 0 verified, 1 a difference, 2 a bad argument, 9 not a bundle.
"""


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "verify",
        help="verify a downloaded bundle against the release's SHA256SUMS and its SBOM",
        description="Verify a bundle: its sha256 against SHA256SUMS, every file against the SBOM, nothing extra.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bundle", metavar="BUNDLE", type=Path, help="a bundle (.tar.gz or .zip) as downloaded")
    p.add_argument("--sums", metavar="SHA256SUMS", type=Path, help="the release's SHA256SUMS")
    p.add_argument(
        "--sbom",
        metavar="SBOM",
        type=Path,
        help="the SBOM beside the bundle on the release (default: the copy inside the bundle)",
    )
    p.add_argument(
        "--repo",
        metavar="OWNER/REPO",
        help="the repository that published the release, for the printed `gh attestation verify` line",
    )
    p.add_argument(
        "--publisher",
        metavar="NAME",
        help="a Windows bundle: the signer (certificate subject CN) every program and library must have "
        "(default: the publisher its manifest names; an unsigned bundle's files are only reported)",
    )
    S.add_flag(p, S.SIGNING_CA)
    p.set_defaults(func=run, needs_matrix=False)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.bundle.verify import attestation_command, verify_bundle

    result = verify_bundle(
        args.bundle,
        sums=args.sums,
        sbom=args.sbom,
        publisher=args.publisher,
        signing_ca=inputs.signing_ca,
        environ=inputs.environ,
    )
    for signature in result.signatures:
        print(f"signature: {signature.line()}")
    for difference in result.differences:
        print(f"error: {difference.line}")
    if result.archive_read:
        checked = f"{result.files_checked} files against {result.sbom}" + (
            f", sha256 against {result.sums}" if result.sums else ""
        )
    else:
        checked = f"sha256 against {result.sums}; the archive was not read"
    count = len(result.differences)
    verdict = "verified" if result.ok else f"{count} difference{'' if count == 1 else 's'}"
    print(f"{args.bundle}: {verdict}: {checked}")
    if result.ok:
        # Provenance is worth checking only for bytes that are what the release lists.
        print(f"build provenance: {attestation_command(args.bundle, args.repo)}")
    return 0 if result.ok else 1
