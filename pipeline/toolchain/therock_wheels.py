"""TheRock from its Python wheels: download the resolved files, ``pip install`` them, ask ``rocm-sdk``.

The resolution names every wheel and the index's sha256 of it. Each is
downloaded through the download cache (same retries, backoff, budget and lock
wait as a tarball) and refused on a sha256 mismatch; then ``pip install
--no-deps --require-hashes --no-index --target`` installs exactly those local
files, nothing else, into the staging folder of the one installer
(:func:`pipeline.toolchain.installer.install.install_archive_set`, which holds
the lock, the marker and the swap for every toolchain). ``rocm-sdk init`` (run
as ``python -m rocm_sdk``, the package's own CLI) expands the devel tree
there, the install's clang must run, and the tree is sealed and swapped into
place: complete or absent, like every toolchain install. The ROCm root is what ``rocm-sdk path --root`` answers;
from there the toolchain is the tarball's (:func:`pipeline.toolchain.therock.rocm_toolchain`),
keyed on the version and the wheels' sha256s.
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.archives.extract import check_archive
from pipeline.errors import ToolchainError
from pipeline.names import safe_identity
from pipeline.processes.groups import run_child
from pipeline.toolchain.installer.download import download
from pipeline.toolchain.installer.install import ArchiveRef, install_archive_set
from pipeline.toolchain.therock import install_check, rocm_toolchain
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest
from pipeline.util.fsutil import confined

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.inputs.resolution_file import ResolvedRocm

# Where pip puts the packages inside an install folder.
SITE = "site-packages"


def pip_install_command(python: str, requirements: Path, site: Path) -> list[str]:
    """The one ``pip install`` line: only the listed local files, each with its hash, nothing resolved."""
    return [python, "-m", "pip", "install", "--no-deps", "--require-hashes", "--no-index", "--no-build-isolation",
            "--no-compile", "--disable-pip-version-check", "--no-warn-script-location", "--target", str(site),
            "-r", str(requirements)]  # fmt: skip


def requirements_text(files: list[tuple[Path, str]]) -> str:
    """A hash-checking requirements file naming each local wheel and its sha256."""
    return "".join(f"{path} --hash=sha256:{sha}\n" for path, sha in files)


def wheels_digest(resolved: ResolvedRocm) -> str:
    """One sha256 over the set of wheel sha256s: what ``compiler_check = "toolchain"`` keys on."""
    return hashlib.sha256("\n".join(sorted(w.sha256 for w in resolved.wheels)).encode()).hexdigest()


def _run(cmd: list[str], *, what: str, env: dict[str, str]) -> str:
    try:
        proc = run_child(cmd, capture_output=True, text=True, timeout=3600, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{what}: cannot run: {exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        raise ToolchainError(f"{what} failed (exit {proc.returncode}): {last}")
    return str(proc.stdout)


def rocm_sdk(python: str, site: Path, *args: str, environ: dict[str, str]) -> str:
    """``rocm-sdk ARGS`` of the install at ``site`` (its own CLI, ``python -m rocm_sdk``)."""
    env = {**environ, "PYTHONPATH": str(site), "PYTHONNOUSERSITE": "1"}
    return _run([python, "-m", "rocm_sdk", *args], what=f"rocm-sdk {' '.join(args)}", env=env).strip()


def sdk_root(python: str, site: Path, environ: dict[str, str]) -> Path:
    """The ROCm root ``rocm-sdk path --root`` names; it must lie inside the install."""
    root = Path(rocm_sdk(python, site, "path", "--root", environ=environ).splitlines()[-1].strip())
    try:
        root.resolve().relative_to(site.parent.resolve())
    except ValueError:
        raise ToolchainError(
            f"rocm-sdk path --root answered {root}, outside the install {site.parent}"
        ) from None
    return root


def install_wheels(
    resolved: ResolvedRocm, request: ToolchainRequest, console: Console, *, python: str
) -> tuple[Path, bool]:
    """The install folder of ``resolved``'s wheels (installed now unless complete), and whether it was reused.

    The one installer (:func:`pipeline.toolchain.installer.install.install_archive_set`) holds the lock,
    the staging folder, the check, the marker and the swap; what differs is how the staging tree is
    filled: pip installs the verified local files into it, instead of each being extracted.
    """
    environ = dict(request.environ)
    refs = [ArchiveRef(label=w.file, sha256=w.sha256) for w in resolved.wheels]
    urls = {w.file: w.url for w in resolved.wheels}
    target = confined(
        request.toolchain_dir,
        f"{resolved.identity}-{resolved.os}-{resolved.family}",
        "install folder",
        ToolchainError,
    )

    def fetch(ref: ArchiveRef) -> Path:
        # Every file verified against the resolution's sha256 before pip sees any of them.
        return download(
            urls[ref.label],
            download_cache=request.download_cache,
            sha256=ref.sha256,
            console=console,
            retry=request.retry,
            verify=check_archive,
            wait_lock=request.wait_lock,
            since=request.started,
        ).path

    def populate(files: Sequence[tuple[ArchiveRef, Path]], tree: Path, scratch: Path) -> None:
        site = tree / SITE
        site.mkdir()
        reqs = scratch / "requirements.txt"
        reqs.write_text(requirements_text([(path, str(ref.sha256)) for ref, path in files]), encoding="utf-8")
        _run(pip_install_command(python, reqs, site), what="pip install of the ROCm wheels", env=environ)

    def finish(tree: Path) -> None:
        # The devel tree ships as a tarball inside its wheel: expanded here, before the tree is sealed.
        rocm_sdk(python, tree / SITE, "init", "--quiet", environ=environ)

    def check(tree: Path) -> None:
        install_check(resolved.os)(sdk_root(python, tree / SITE, environ))

    installed = install_archive_set(
        refs,
        target,
        fetch=fetch,
        populate=populate,
        finish=finish,
        check=check,
        wait_lock=request.wait_lock,
        since=request.started,
        console=console,
    )
    return installed.root, installed.reused


def prepare_rocm_wheels(
    request: ToolchainRequest, console: Console, *, python: str = sys.executable
) -> Toolchain:
    """The toolchain of the run's resolved wheel build: installed (or reused), found through ``rocm-sdk path``."""
    leg, resolved = request.leg, request.rocm
    assert resolved is not None and resolved.distribution == "wheels"
    if (leg.os == "windows") != (sys.platform == "win32"):
        raise ToolchainError(
            f"leg {leg.name}: its {leg.os} wheels install on {leg.os} only (pip runs their own platform)"
        )
    install, reused = install_wheels(resolved, request, console, python=python)
    root = sdk_root(python, install / SITE, dict(request.environ))
    console.print(
        f"{leg.name}: ROCm {resolved.version} ({resolved.policy}) from {len(resolved.wheels)} wheels "
        f"{'reused' if reused else 'installed'} at {install}, sha256 checked against the wheel index",
        highlight=False,
    )
    details = {
        "origin": "wheels",
        "policy": resolved.policy,
        "url": resolved.url,
        "family": resolved.family,
        "install_root": str(install),
        "wheels": " ".join(f"{w.file}#sha256={w.sha256}" for w in resolved.wheels),
        # Each wheel was checked against the index's sha256: as strict as a verified tarball's digest.
        "archive_sha256": wheels_digest(resolved),
    }
    if resolved.published is not None:
        details["published"] = resolved.published.isoformat()
    toolchain = rocm_toolchain(root, leg, version=resolved.version, details=details, environ=request.environ)
    return dataclasses.replace(toolchain, identity=safe_identity(resolved.identity))
