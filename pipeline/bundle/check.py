"""``check-bundle``: does a bundle run on a clean machine?

The bundle is unpacked into an empty folder; its root is the top folder its
manifest names (``llama-<tag>/`` in a tar.gz, as upstream's archives; the top
of a zip). Then:

- every ELF at the root (every ``.exe``/``.dll`` for Windows, every Mach-O
  file anywhere in a macOS bundle) must find each library it needs in the
  bundle, through its own ``$ORIGIN``-relative RUNPATH (beside it for
  Windows; for macOS through the ``LC_RPATH``s of its loading chain, as dyld
  does), or on the OS's base-system allowlist; a bundle with none fails;
- no RUNPATH/RPATH entry may name an absolute (build-machine) folder, leave
  the bundle, or be empty or relative (``$ORIGIN:``, ``.``: the loader reads
  those against the current working folder);
- the newest ``GLIBC_x.y`` required must not be above the leg's floor
  (``glibc_max``; the highest required is reported, as auditwheel does);
- a LICENSE must be at the root, and every third-party file copied from
  the toolchain must have its license files in the bundle
  (:mod:`pipeline.bundle.third_party`);
- every library the backend declares as loaded by name at run time
  (:class:`~pipeline.backends.protocol.OpenedLibrary`: libamdhip64's
  libamd_comgr, libtensilelite-host's libomp.so) must be in the bundle
  wherever a shipped file asks for it;
- no GPU driver library ships (``libcuda.so*``, ``nvcuda.dll``): the
  driver's own, installed with it (a CUDA bundle may need it, never carry it);
- every ELF is built for the bundle's architecture (``arch`` in its
  manifest), and its libraries are checked against that architecture's
  base system (``ld-linux-aarch64.so.1`` for arm64);
- the smoke run (:mod:`pipeline.bundle.smoke`), unless the bundle is for
  another OS: each main program's ``--version``, the backends load, a
  tokenizer check and one forward pass. A CUDA bundle on a machine without
  an NVIDIA driver is run against a stand-in driver made for the check
  (:mod:`pipeline.bundle.driver_standin`); a Linux arm64 bundle on an x86-64
  machine runs under ``qemu-aarch64`` (:mod:`pipeline.bundle.emulation`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.archives.deterministic import archive_kind
from pipeline.backends import runtime_profile
from pipeline.backends.protocol import OpenedLibrary, asked_names
from pipeline.bundle.check_findings import Problem, TreeFindings
from pipeline.bundle.closure_policy import DEFAULT_GLIBC_MAX, is_base_system, is_origin_relative
from pipeline.bundle.driver_standin import DRIVER, DriverForSmoke, driver_for_smoke, driver_users
from pipeline.bundle.elfdeps import ElfInfo, is_elf, read_elf
from pipeline.bundle.emulation import host_arch, how_to_run
from pipeline.bundle.make import MANIFEST_NAME, manifest_root, parse_manifest, read_manifest
from pipeline.bundle.pedeps import is_pe, pe_arch, read_pe_imports

# Re-exported: the GPU check repeats the smoke run's forward pass on a lent GPU (scripts/gpu_check/check.py),
# through this entry module (pipeline.bundle.smoke and smoke_process are the feature's own).
from pipeline.bundle.smoke import FORWARD_PROGRAM as FORWARD_PROGRAM
from pipeline.bundle.smoke import FORWARD_PROMPT as FORWARD_PROMPT
from pipeline.bundle.smoke import FORWARD_TOKENS as FORWARD_TOKENS
from pipeline.bundle.smoke import SmokeCheck, SmokeRun, expects_cpu_module, smoke_checks
from pipeline.bundle.smoke_process import scrubbed_env as scrubbed_env
from pipeline.bundle.stage import LICENSE_NAME
from pipeline.bundle.third_party import license_problems
from pipeline.errors import BundleError, ToolchainError
from pipeline.inputs.cuda_driver import DRIVER_FLOORS, runtime_line
from pipeline.inputs.leg import Leg
from pipeline.inputs.runners import DEFAULT_MACOS_MIN
from pipeline.names import dotted_text, dotted_version
from pipeline.util.json_text import read_bytes
from pipeline.util.tree_removal import remove_tree

if TYPE_CHECKING:
    from pipeline.bundle.machodeps import MachoInfo


@dataclass(frozen=True, kw_only=True)
class BundleCheck:
    """The verdict on one bundle; ``to_json`` goes into the leg's record."""

    bundle: str
    os: str
    files_checked: int
    arch: str = "x64"
    # How the smoke run started the programs when not directly ("under qemu-aarch64 -L ...").
    emulator: str | None = None
    problems: tuple[Problem, ...] = ()
    glibc_required: str | None = None
    glibc_required_by: str | None = None
    glibc_max: str | None = None
    smoke: tuple[SmokeRun, ...] = ()
    smoke_skipped: str | None = None
    # The smoke run's checks (versions, backends, tokenizer, forward-pass), one line each.
    checks: tuple[SmokeCheck, ...] = ()
    # What was read of each ELF file checked, by bundle path: the smoke run's driver look-up takes it
    # instead of parsing the files again. Not part of the verdict (nor of to_json).
    elves: tuple[tuple[str, ElfInfo], ...] = field(default=(), compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def summary(self) -> str:
        count = len(self.problems)
        verdict = "passed" if self.ok else f"failed ({count} problem{'' if count == 1 else 's'})"
        glibc = f", needs glibc {self.glibc_required}" if self.glibc_required else ""
        smoke = f", {sum(r.ok for r in self.smoke)}/{len(self.smoke)} programs ran" if self.smoke else ""
        counts = {
            status: sum(c.status == status for c in self.checks) for status in ("passed", "failed", "skipped")
        }
        checks = (
            f", smoke checks {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
            if self.checks
            else ""
        )
        binaries = f"{self.files_checked} binar{'y' if self.files_checked == 1 else 'ies'}"
        return f"check-bundle {verdict}: {binaries}{glibc}{smoke}{checks}"

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "ok": self.ok,
            "summary": self.summary,
            "os": self.os,
            "arch": self.arch,
            "emulator": self.emulator,
            "files_checked": self.files_checked,
            "problems": [p.to_json() for p in self.problems],
            "glibc_required": self.glibc_required,
            "glibc_required_by": self.glibc_required_by,
            "glibc_max": self.glibc_max,
            "smoke": [r.to_json() for r in self.smoke],
            "smoke_skipped": self.smoke_skipped,
            "checks": [c.to_json() for c in self.checks],
        }


# The NVIDIA driver's libraries (Linux, Windows): allowed as a need, refused as a shipped file.
_DRIVER_FILE = re.compile(r"^(?:libcuda\.so(?:\.[0-9.]+)?|nvcuda\.dll)$", re.IGNORECASE)


_KINDS = {"windows": ".exe/.dll", "macos": "Mach-O", "linux": "ELF"}


def _binaries(root: Path, os_name: str) -> list[str]:
    """The programs and libraries: the files at the bundle's root (as in upstream's archives).

    For macOS every Mach-O file of the bundle, in any folder: install names and LC_RPATHs may
    reach into subfolders (``@loader_path/../lib``), so each file there is checked too.
    """
    if os_name == "macos":
        # Imported for a macOS bundle only: macholib is a tenth of a second of every other check.
        from pipeline.bundle.machodeps import is_macho

        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if is_macho(p))
    found = []
    for item in sorted(root.iterdir()):
        if item.is_dir():
            continue
        if os_name == "windows":
            if item.suffix.lower() in (".exe", ".dll") and is_pe(item):
                found.append(item.name)
        elif is_elf(item):
            found.append(item.name)
    return found


def _search_dirs(
    root: Path, rel: str, entries: tuple[str, ...], found: TreeFindings, *, tag: str
) -> list[Path]:
    """The bundle folders a file's RUNPATH reaches; a problem for each entry that is not one."""
    here = (root / rel).parent
    dirs = []
    for entry in entries:
        if not entry or not (entry.startswith("/") or is_origin_relative(entry)):
            # ld.so resolves an empty entry ("$ORIGIN:") or a relative one (".", "lib") against the
            # working folder of whoever runs the program: a same-named file there would be loaded.
            what = "an empty entry" if not entry else f"the relative entry {entry!r}"
            found.problems.append(
                Problem(
                    file=rel,
                    kind="runpath",
                    message=f"{tag} {':'.join(entries)!r} has {what}: the loader searches the current working "
                    f"folder there (want $ORIGIN-relative entries only)",
                )
            )
            continue
        if not is_origin_relative(entry):
            found.problems.append(
                Problem(
                    file=rel,
                    kind="runpath",
                    message=f"absolute or build-machine RUNPATH/RPATH entry {entry!r} (want $ORIGIN-relative)",
                )
            )
            continue
        rest = entry.removeprefix("${ORIGIN}").removeprefix("$ORIGIN").lstrip("/")
        target = Path(os.path.normpath(here / rest))
        if not target.is_relative_to(root):
            found.problems.append(
                Problem(file=rel, kind="runpath", message=f"RUNPATH entry {entry!r} leaves the bundle")
            )
            continue
        dirs.append(target)
    return dirs


def _check_elf(
    root: Path, rel: str, found: TreeFindings, in_bundle: dict[str, str], arch: str = "x64"
) -> ElfInfo:
    """The checks of one ELF file, from one parse of it; what was read."""
    info = read_elf(root / rel)
    if info.arch != arch:
        found.problems.append(
            Problem(file=rel, kind="arch", message=f"built for {info.arch}, the bundle is for {arch}")
        )
    dirs = _search_dirs(root, rel, info.search_paths, found, tag="RUNPATH" if info.runpath else "RPATH")
    for library in info.needed:
        if any((d / library).exists() for d in dirs) or is_base_system("linux", library, arch):
            continue
        if library in in_bundle:
            message = f"needs {library}: it is in the bundle ({in_bundle[library]}) but not on its RUNPATH"
        else:
            where = "linux" if arch == "x64" else f"linux {arch}"
            message = f"needs {library}: neither in the bundle nor on the {where} base-system allowlist"
        found.problems.append(Problem(file=rel, kind="library", library=library, message=message))
    for version in info.glibc_versions[-1:]:
        if found.glibc is None or version > found.glibc:
            found.glibc, found.glibc_by = version, rel
    return info


def _check_pe(
    root: Path, rel: str, found: TreeFindings, in_bundle: dict[str, str], arch: str = "x64"
) -> None:
    if (machine := pe_arch(root / rel)) != arch:
        found.problems.append(
            Problem(file=rel, kind="arch", message=f"built for {machine}, the bundle is for {arch}")
        )
    beside = {p.name.lower() for p in (root / rel).parent.iterdir()}
    for library in read_pe_imports(root / rel):
        if library.lower() in beside or is_base_system("windows", library, arch):
            continue
        where = in_bundle.get(library.lower())
        message = (
            f"needs {library}: it is in the bundle ({where}) but not beside it"
            if where
            else f"needs {library}: neither in the bundle nor on the windows base-system allowlist"
        )
        found.problems.append(Problem(file=rel, kind="library", library=library, message=message))


def check_tree(
    root: Path,
    *,
    os_name: str,
    glibc_max: str | None,
    arch: str = "x64",
    macos_min: str | None = None,
    cuda_line: str | None = None,
    opened: Sequence[OpenedLibrary] = (),
) -> BundleCheck:
    """Check an unpacked bundle (no smoke test): architecture, libraries, RUNPATHs, glibc floor, LICENSE,
    for a CUDA leg (``cuda_line``) that its runtime is of that line, and that every library a shipped file
    loads by name (``opened``, the backend's declarations) ships too."""
    found = TreeFindings()
    windows = os_name == "windows"
    in_bundle = {
        (p.name.lower() if windows else p.name): p.relative_to(root).as_posix()
        for p in sorted(root.rglob("*"))
        if not p.is_dir() or p.is_symlink()
    }
    images: dict[str, MachoInfo] = {}
    elves: dict[str, ElfInfo] = {}
    if os_name == "macos":
        from pipeline.bundle.macho_loads import check_macho, check_macho_loads
    for rel in _binaries(root, os_name):
        found.files += 1
        if windows:
            _check_pe(root, rel, found, in_bundle, arch)
        elif os_name == "macos":
            if (info := check_macho(root, rel, found, arch, macos_min)) is not None:
                images[rel] = info
        else:
            elves[rel] = _check_elf(root, rel, found, in_bundle, arch)
    if images:
        check_macho_loads(root, images, found)
    if found.files == 0:
        # A check that examined nothing has shown nothing: a bundle without one program or library fails.
        where = "anywhere in the bundle" if os_name == "macos" else "at the bundle's root"
        found.problems.append(
            Problem(
                file=".",
                kind="empty",
                message=f"no {_KINDS.get(os_name, 'ELF')} program or library {where}: nothing was checked",
            )
        )
    floor = dotted_version(glibc_max) if glibc_max and os_name == "linux" else None
    if floor is not None and found.glibc is not None and found.glibc > floor:
        found.problems.append(
            Problem(
                file=found.glibc_by or "?",
                kind="glibc",
                library="libc.so.6",
                message=f"requires GLIBC_{dotted_text(found.glibc)}, above the leg's floor glibc_max = {glibc_max}",
            )
        )
    for name in sorted(in_bundle):
        if _DRIVER_FILE.match(name):
            found.problems.append(
                Problem(
                    file=in_bundle[name],
                    kind="driver",
                    library=name,
                    message="the GPU driver's own library ships with the driver, never in a bundle",
                )
            )
    if cuda_line is not None:
        found.problems += _runtime_problems(in_bundle, cuda_line)
    found.problems += _opened_problems(root, in_bundle, opened, windows=windows)
    if not (root / LICENSE_NAME).is_file():
        found.problems.append(
            Problem(
                file=LICENSE_NAME, kind="license", message="missing: every bundle carries llama.cpp's LICENSE"
            )
        )
    return BundleCheck(
        bundle=str(root),
        os=os_name,
        files_checked=found.files,
        problems=tuple(found.problems),
        glibc_required=dotted_text(found.glibc) if found.glibc else None,
        glibc_required_by=found.glibc_by,
        glibc_max=glibc_max if os_name == "linux" else None,
        elves=tuple(sorted(elves.items())),
    )


def _runtime_problems(in_bundle: Mapping[str, str], cuda_line: str) -> list[Problem]:
    """A CUDA runtime newer than the leg's line: it needs a newer driver than the one its notes name."""
    problems = []
    # A line pinned by its minor release ("13.4") is of its major's runtime.
    major = cuda_line.split(".", 1)[0]
    for name in sorted(in_bundle):
        line = runtime_line(name)
        if line is not None and line.isdigit() and major.isdigit() and int(line) > int(major):
            floor = DRIVER_FLOORS.get(line)
            needs = f", which needs an {floor.branch} driver" if floor is not None else ""
            problems.append(
                Problem(
                    file=in_bundle[name],
                    kind="runtime",
                    library=name,
                    message=f"a CUDA {line}.x runtime{needs}, newer than the leg's CUDA {cuda_line}.x line",
                )
            )
    return problems


def _opened_problems(
    root: Path, in_bundle: Mapping[str, str], opened: Sequence[OpenedLibrary], *, windows: bool
) -> list[Problem]:
    """A library a shipped file loads by name at run time that the bundle lacks: the program starts, and fails
    where it loads it (no GPU listed, a GEMM that aborts)."""
    problems = []
    for key, rel in sorted(in_bundle.items()):
        if not any(e.owns(key, windows=windows) for e in opened):
            continue  # only an owner's bytes are read
        path = root / rel
        if path.is_symlink() or not path.is_file():
            continue
        for name, entry in asked_names(path.name, path.read_bytes(), opened, windows=windows):
            if (name.lower() if windows else name) not in in_bundle:
                problems.append(
                    Problem(
                        file=rel,
                        kind="runtime-loaded",
                        library=name,
                        message=f"loads {name} by name at run time, and the bundle lacks it "
                        f"({entry.evidence})",
                    )
                )
    return problems


def unpack(bundle: Path, dest: Path, *, lift: bool = True) -> Path:
    """Unpack ``bundle`` into the new folder ``dest`` with the install's safe extraction (``lift``: see
    :func:`~pipeline.archives.extract.extract_archive`)."""
    from pipeline.archives.extract import extract_archive

    try:
        return extract_archive(bundle, dest, lift=lift)
    except ToolchainError as err:
        raise BundleError(f"{bundle}: cannot unpack: {err.message}") from None


def unpack_bundle(bundle: Path, dest: Path) -> tuple[dict[str, Any], Path]:
    """Unpack ``bundle`` into ``dest`` and read its manifest there: (the manifest, the bundle's root).

    One pass over the archive: :func:`~pipeline.bundle.make.read_manifest` on the archive inflated it
    whole to reach the manifest (a member near its end), and the extraction inflated it again. The
    rules are read_manifest's: the manifest at the top or one folder down, in the folder it names.
    Anything but a .tar.gz or .zip is read_manifest's to refuse, as before.
    """
    if not bundle.is_file() or archive_kind(bundle) is None:
        manifest = read_manifest(bundle)
        unpacked = unpack(bundle, dest)
        return manifest, unpacked if (unpacked / MANIFEST_NAME).is_file() else unpacked / manifest_root(
            manifest
        )
    unpacked = unpack(bundle, dest, lift=False)
    folders = sorted(p for p in unpacked.iterdir() if p.is_dir() and not p.is_symlink())
    found = [
        p
        for p in (unpacked / MANIFEST_NAME, *(f / MANIFEST_NAME for f in folders))
        if p.is_file() and not p.is_symlink()
    ]
    if not found:
        raise BundleError(f"{bundle}: foreign bundle: no {MANIFEST_NAME} inside")
    for path in found:
        where = f"{bundle}:{path.relative_to(unpacked).as_posix()}"
        manifest = parse_manifest(
            read_bytes(path, where=where, what="the manifest", error=BundleError), where
        )
        if path.parent == unpacked / manifest_root(manifest):
            return manifest, path.parent
    raise BundleError(
        f"{bundle}: corrupt bundle: {found[0].relative_to(unpacked).as_posix()} is not in the folder "
        "its manifest names"
    )


def check_bundle(
    bundle: Path,
    *,
    scratch: Path,
    host_os: str,
    glibc_max: str | None = None,
    smoke: bool = True,
    source_tree: Path | None = None,
    environ: Mapping[str, str] | None = None,
    signing_ca: Path | None = None,
) -> BundleCheck:
    """Unpack ``bundle`` under the empty folder ``scratch`` and check it; the smoke run happens
    when ``smoke`` and the bundle is for ``host_os``. ``glibc_max`` overrides the manifest's floor.
    ``source_tree``: the llama.cpp tree the bundle was built from (its ``models/`` vocab for the
    tokenizer check; without it that check is skipped, saying so). ``environ``: the run's
    environment, of which the smoke run keeps the GPU driver selection only. ``signing_ca``: the roots a
    signed Windows bundle's signatures must chain to (None: the system's).
    """
    if scratch.exists():
        remove_tree(scratch)
    manifest, root = unpack_bundle(bundle, scratch / "bundle")
    if not root.is_dir():
        raise BundleError(
            f"{bundle}: corrupt bundle: no folder {manifest_root(manifest)!r}, which its manifest names"
        )
    leg = manifest.get("leg") or {}
    os_name = str(leg.get("os") or "linux")
    arch = str(leg.get("arch") or "x64")
    floor = glibc_max or leg.get("glibc_max") or (DEFAULT_GLIBC_MAX if os_name == "linux" else None)
    macos_min = str(leg.get("macos_min") or DEFAULT_MACOS_MIN) if os_name == "macos" else None
    line = leg.get("cuda_line")
    backend = leg.get("backend")
    opened = runtime_profile(backend, os_name).opened if isinstance(backend, str) else ()
    result = check_tree(
        root,
        os_name=os_name,
        glibc_max=floor,
        arch=arch,
        macos_min=macos_min,
        cuda_line=str(line) if isinstance(line, str) and line else None,
        opened=opened,
    )
    signatures: list[Problem] = []
    if os_name == "windows":
        from pipeline.bundle.signing import check_signatures

        # A bundle whose manifest says it is signed: every program and library, by its publisher.
        signatures = check_signatures(
            root, manifest, trusted=signing_ca, environ={} if environ is None else environ
        )
    runs: list[SmokeRun] = []
    checks: list[SmokeCheck] = []
    skipped: str | None = None
    driver_problems: list[Problem] = []
    how = how_to_run(os_name, arch, host_os=host_os, host=host_arch())
    if not smoke:
        skipped = "--no-smoke"
    elif how.skipped is not None:
        skipped = how.skipped
    elif how.prefix and os_name == "linux" and driver_users(root, result.elves):
        skipped = f"a CUDA bundle for {arch} {how.note}: no stand-in NVIDIA driver for {arch} here"
    else:
        models = source_tree / "models" if source_tree is not None else None
        args = manifest.get("cmake_args")
        backend_dl = expects_cpu_module([str(a) for a in args] if isinstance(args, list) else [])
        from pipeline.bundle.gpu_smoke import driver_selection

        # Its own folder beside the unpacked bundle: the stand-in is beside nothing that ships.
        driver = (
            driver_for_smoke(root, scratch / "driver", scrubbed_env(scratch / "home"), elves=result.elves)
            if os_name == "linux"
            else DriverForSmoke()
        )
        if driver.problem:
            driver_problems.append(
                Problem(file=driver.needed_by[0], kind="smoke", library=DRIVER, message=driver.problem)
            )
        try:
            runs, checks = smoke_checks(
                root,
                os_name,
                scratch / "home",
                models=models,
                backend_dl=backend_dl,
                driver_env={**driver_selection(environ or {}), **driver.env},
                driver=driver.line,
                prefix=how.prefix,
            )
        finally:
            # The stand-in exists for the run only: no libcuda.so* is left under the output folder, where
            # a later step (an upload of out/, a loader search) could take it for the driver.
            if driver.library_dir is not None:
                remove_tree(driver.library_dir)
        if not runs:
            skipped = "no llama-* programs"
    problems = (
        list(result.problems)
        + signatures
        + driver_problems
        + [
            # A redistributed runtime travels with its license, or the bundle does not ship.
            Problem(file=path, kind="license", message=why)
            for path, why in license_problems(manifest, root)
        ]
        + [Problem(file=r.program, kind="smoke", message=r.failure) for r in runs if not r.ok]
        + [
            Problem(file=c.program or c.name, kind="smoke", message=c.line)
            for c in checks
            if not c.ok and c.name != "versions"
        ]
    )
    return BundleCheck(
        bundle=str(bundle),
        os=os_name,
        arch=arch,
        emulator=how.note,
        files_checked=result.files_checked,
        problems=tuple(problems),
        glibc_required=result.glibc_required,
        glibc_required_by=result.glibc_required_by,
        glibc_max=result.glibc_max,
        smoke=tuple(runs),
        smoke_skipped=skipped,
        checks=tuple(checks),
    )


def host_os() -> str:
    """The OS this process runs on, in matrix.toml's words."""
    return "windows" if sys.platform == "win32" else "macos" if sys.platform == "darwin" else "linux"


def check_built_bundle(
    bundle: Path,
    leg: Leg,
    *,
    scratch: Path,
    source_tree: Path | None = None,
    environ: Mapping[str, str] | None = None,
    signing_ca: Path | None = None,
) -> BundleCheck:
    """The check every build runs on its bundle: the leg's glibc floor, the smoke run on its own OS
    (with the tree it built for the tokenizer check)."""
    return check_bundle(
        bundle,
        scratch=scratch,
        host_os=host_os(),
        glibc_max=leg.glibc_max if leg.os == "linux" else None,
        source_tree=source_tree,
        environ=environ,
        signing_ca=signing_ca,
    )
