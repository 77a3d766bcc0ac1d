"""Whether a leg run signs its bundle, with what, and the signatures a bundle must carry.

matrix.toml's ``[signing]`` names the Windows legs the release signs and the
publisher (the signing certificate's subject CN). A run signs such a leg:

- with the local signer, when ``--signing-pfx`` names a PKCS#12 file
  (osslsigncode, :mod:`pipeline.bundle.authenticode`): a release engineer, the tests;
- on GitHub Actions in ``[signing] repository``: the build stops once the
  bundle's files are staged (record ``staged``), the workflow's signing step,
  the only one that sees the signing secrets, signs them in place, and
  ``pack`` makes the bundle;
- nowhere else: a fork, or a laptop without a PFX, builds the leg unsigned,
  and says so.

A signed bundle's manifest names its publisher (``signing``) and the signer
of each file; ``check-bundle`` then refuses any program or library that is
unsigned, does not verify or names another publisher.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.bundle.authenticode import LocalSigner, PeSignature, pe_files, sign_files, verify_tree
from pipeline.bundle.check_findings import Problem
from pipeline.errors import BundleError
from pipeline.inputs import settings as S
from pipeline.inputs.leg import Leg
from pipeline.inputs.run_inputs import RunInputs


@dataclass(frozen=True, kw_only=True)
class SigningPlan:
    """How one leg run signs: the publisher every signature must name, and the local signer (None: the
    workflow's signing step signs the staged files between ``build`` and ``pack``)."""

    publisher: str
    signer: LocalSigner | None
    # The roots (PEM) the signatures must chain to; None: the system's.
    trusted: Path | None

    def to_manifest(self) -> dict[str, Any]:
        return {"publisher": self.publisher}


def signing_plan(inputs: RunInputs, leg: Leg) -> tuple[SigningPlan | None, str | None]:
    """The run's plan for ``leg`` (None: unsigned), and, for a leg the release signs that this run builds
    unsigned, the line saying why."""
    config = inputs.require_matrix().signing
    if not config.covers(leg):
        return None, None
    assert config.publisher is not None  # matrix.toml's check: a signed leg names its publisher
    environ = inputs.environ
    if (pfx := inputs.signing_pfx) is not None:
        password = S.pick(S.SIGNING_PASSWORD, environ=environ).value or ""
        signer = LocalSigner(
            pfx=pfx,
            password=str(password),
            description=config.publisher,
            timestamp_url=inputs.signing_timestamp_url,
        )
        return SigningPlan(publisher=config.publisher, signer=signer, trusted=inputs.signing_ca), None
    repository = environ.get(S.GITHUB_REPOSITORY.env[0])
    if inputs.in_actions and config.repository is not None and repository == config.repository:
        return SigningPlan(publisher=config.publisher, signer=None, trusted=inputs.signing_ca), None
    where = f"in {config.repository}'s Actions runs" if config.repository else "by no workflow"
    return None, (
        f"{leg.name}: the release signs it ([signing] in {inputs.matrix_path}), {where} or with "
        f"{S.SIGNING_PFX.flag} PFX; this run builds it unsigned"
    )


def signature_problems(signatures: Sequence[PeSignature], publisher: str) -> list[Problem]:
    """One problem per program or library that is unsigned, does not verify, or names another publisher."""
    return [
        Problem(file=sig.file, kind="signature", message=problem)
        for sig in signatures
        if (problem := sig.problem(publisher)) is not None
    ]


def check_signatures(
    root: Path, manifest: Mapping[str, Any], *, trusted: Path | None, environ: Mapping[str, str]
) -> list[Problem]:
    """For a bundle whose manifest says it is signed: every program and library under ``root`` is signed by
    the manifest's publisher, and verifies against the roots of ``trusted`` (None: the system's). Nothing to
    check for an unsigned bundle."""
    publisher = declared_publisher(manifest)
    if publisher is None:
        return []
    signatures = verify_tree(root, trusted=trusted, environ=environ)
    if not signatures:
        return [Problem(file=".", kind="signature", message="signed bundle without one program or library")]
    return signature_problems(signatures, publisher)


def declared_publisher(manifest: Mapping[str, Any]) -> str | None:
    """The publisher a bundle's manifest says signed it (None: an unsigned bundle)."""
    signing = manifest.get("signing")
    publisher = signing.get("publisher") if isinstance(signing, Mapping) else None
    return publisher if isinstance(publisher, str) and publisher else None


def sign_and_check(stage: Path, plan: SigningPlan, *, environ: Mapping[str, str]) -> dict[str, str]:
    """Sign every program and library of a staged bundle with the plan's local signer (the workflow's signing
    step has signed them already when it has none), then verify each: BundleError naming the first that is
    unsigned, does not verify or names another publisher. Each file's signer, by its path in the bundle."""
    files = pe_files(stage)
    if not files:
        raise BundleError(f"{stage}: no program or library to sign")
    if plan.signer is not None:
        sign_files(files, plan.signer, environ=environ)
    signatures = verify_tree(stage, trusted=plan.trusted, environ=environ)
    if problems := signature_problems(signatures, plan.publisher):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BundleError(f"signing: {problems[0].line}{more}")
    return {sig.file: sig.publisher or "" for sig in signatures}
