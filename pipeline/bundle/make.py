"""Bundles: a leg's programs and shared libraries, a manifest, and comparing two bundles.

What goes in (the selection rule), from the build directory, top level only
(then the runtime closure and the licenses are added, see
:mod:`pipeline.bundle.stage` and :mod:`pipeline.bundle.closure`):

- ``bin/``: shared libraries (``*.so``, ``*.so.N...``, ``*.dll``, ``*.dylib``),
  ``*.exe``, and files with an executable bit, except build by-products
  (``*.a``, ``*.lib``, ``*.pdb``, ``*.o``, ``*.obj``, ``*.exp``, ``*.ilk``);
- ``lib/``: shared libraries only.

They land flat at the bundle's root, as in upstream's archives (see
:mod:`pipeline.bundle.stage`: ``llama-<tag>/`` in a tar.gz, the top of a
zip), beside LICENSE and ``manifest.json``; a name made in both ``bin/`` and
``lib/`` is an error. The manifest holds inputs and outputs only, nothing that
differs between two runs of the same inputs: no times, no cache statistics,
no absolute paths of the machine (see :func:`portable_text`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.archives.deterministic import Entry, archive_kind, read_members, write_tar_gz, write_zip
from pipeline.archives.packing import PackStats
from pipeline.backends import bundle_file_name
from pipeline.bundle.closure import complete_runtime, usable_toolchain_root
from pipeline.bundle.sbom_cache import cached_sbom
from pipeline.bundle.stage import (
    STAGE_DIR,
    fresh_stage,
    member_name,
    payload_items,
    stage_file,
    stage_licenses,
    toolchain_root,
    top_folder,
)

# Re-exported: the benchmark packs a staged folder as a leg's bundle step does (scripts/bench/real_tree.py),
# through this entry module (pipeline.bundle.stage is the feature's own).
from pipeline.bundle.stage import archive_entries as archive_entries
from pipeline.bundle.stage import staged_files as staged_files
from pipeline.bundle.third_party import describe_third_party
from pipeline.errors import BundleError
from pipeline.inputs.leg import Leg
from pipeline.inputs.pins import DEFAULT_CUDA_LINE
from pipeline.names import DIST_DIR as DIST_DIR
from pipeline.names import SBOM_NAME, SBOM_SUFFIX
from pipeline.results.record import LegRecord
from pipeline.toolchain.toolchain import Toolchain
from pipeline.util import json_text
from pipeline.util.fsutil import atomic_write_bytes, confined

FORMAT = "llama-pipeline-bundle"
# 2: the bundle's root is upstream's flat layout under llama-<tag>/ (tar.gz); 1 had bin/ and lib/ at the top.
FORMAT_VERSION = 2
MANIFEST_NAME = "manifest.json"
MANIFEST_MODE = 0o644

_SHARED_LIB = re.compile(r"\.(?:so(?:\.\d+)*|dll|dylib)$", re.IGNORECASE)
_BY_PRODUCT = re.compile(r"\.(?:a|lib|pdb|o|obj|exp|ilk)$", re.IGNORECASE)
# CMake arguments that do not change the outputs but name a machine path.
_DROPPED_ARGS = re.compile(r"^-DCMAKE_(?:[A-Za-z]+_COMPILER_LAUNCHER|MAKE_PROGRAM)(?::[A-Z]+)?=")
# Toolchain details that are inputs; anything else (a local path, a cache flag) stays in the record.
# driver_min: a CUDA toolkit's oldest driver for its runtime (pipeline.inputs.cuda_driver).
TOOLCHAIN_KEYS = ("version", "url", "sha256", "driver_min")


# --------------------------------------------------------------------------
# Pure rules


def is_payload(relpath: str, *, executable: bool) -> bool:
    """The selection rule: does ``relpath`` (relative to the build dir, '/'-separated) go in?"""
    folder, _, name = relpath.partition("/")
    if not name or "/" in name:
        return False
    shared = bool(_SHARED_LIB.search(name))
    if folder == "lib":
        return shared
    if folder == "bin":
        return shared or name.lower().endswith(".exe") or (executable and not _BY_PRODUCT.search(name))
    return False


def _path_variants(root: str) -> list[str]:
    variants = {root.rstrip("/\\")}
    variants.add(root.replace("\\", "/").rstrip("/"))
    return sorted((v for v in variants if len(v) > 1), key=len, reverse=True)


def portable_text(text: str, roots: Mapping[str, str]) -> str:
    """Replace each root folder in ``text`` by ``<name>``, longest root first.

    A root only matches whole path components: ``/ws/out`` does not match
    ``/ws/output``. Paths outside the roots (``/usr/bin/gcc``: the compiler's
    identity) are kept.
    """
    pairs = sorted(
        ((v, name) for name, root in roots.items() for v in _path_variants(root)), key=lambda p: -len(p[0])
    )
    for value, name in pairs:
        text = re.sub(re.escape(value) + r"(?=$|[/\\;:,\"'\s])", f"<{name}>", text)
    return text


def portable_cmake_args(args: Sequence[str], roots: Mapping[str, str]) -> list[str]:
    """The CMake arguments as inputs: launchers, the make program and prefix maps dropped, roots replaced."""
    from pipeline.toolchain.prefixmap import strip_prefix_maps

    return [portable_text(a, roots) for a in strip_prefix_maps(args) if not _DROPPED_ARGS.match(a)]


def _is_remote_url(repo: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", repo)) and not repo.startswith("file:")


def source_manifest(source: Mapping[str, Any], *, tag: str, commit: str | None) -> dict[str, Any]:
    """The source part of a manifest from a record's source (a SourceSpec's JSON or a --source folder)."""
    repo = source.get("repo") or source.get("url")
    mix = source.get("mix") or []
    return {
        # A local path or file:// URL names this machine; reproduce then needs --source.
        "repo": repo if isinstance(repo, str) and _is_remote_url(repo) else None,
        "base_tag": source.get("base_tag") or (tag if not mix else None),
        "base_commit": source.get("base_commit"),
        "commit": commit,
        "mix": list(mix),
        "mix_hash": source.get("mix_hash"),
    }


def build_manifest(
    *,
    name: str,
    leg: Leg,
    tag: str,
    source: Mapping[str, Any],
    commit: str | None,
    toolchain: Toolchain,
    cmake_args: Sequence[str],
    roots: Mapping[str, str],
    files: Sequence[Mapping[str, Any]],
    root: str = "",
) -> dict[str, Any]:
    """The manifest object: inputs (leg, tag, source, toolchain, flags) and outputs (files).

    ``root``: the archive's top folder holding the bundle (``llama-<tag>``, or
    "" for a zip); the files' paths are relative to it.
    """
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "root": root,
        "leg": {
            "name": leg.name,
            "backend": leg.backend,
            "os": leg.os,
            "arch": leg.arch,
            "family": leg.family,
            "targets": list(leg.targets),
            "cuda_architectures": list(leg.cuda_architectures),
            # The CUDA line the leg builds: check-bundle refuses a runtime of a newer one.
            **({"cuda_line": leg.cuda_line or DEFAULT_CUDA_LINE} if leg.backend == "cuda" else {}),
            **({"glibc_max": leg.glibc_max} if leg.os == "linux" else {}),
            **({"macos_min": leg.macos_min} if leg.os == "macos" else {}),
        },
        "tag": tag,
        "source": source_manifest(source, tag=tag, commit=commit),
        "toolchain": {
            "kind": toolchain.kind,
            "identity": toolchain.identity,
            **{k: toolchain.details[k] for k in TOOLCHAIN_KEYS if k in toolchain.details},
        },
        "compilers": {lang: portable_text(text, roots) for lang, text in sorted(toolchain.compilers.items())},
        "cmake_args": portable_cmake_args(cmake_args, roots),
        "files": sorted((dict(f) for f in files), key=lambda f: str(f["path"])),
    }


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")


# --------------------------------------------------------------------------
# Making a bundle


@dataclass(frozen=True, kw_only=True)
class PayloadFile:
    # The bundle path: the file's name, at the bundle's root.
    relpath: str
    path: Path
    # The target name (same folder) when stored as a symlink.
    link: str | None = None


def collect_payload(build_dir: Path, *, symlinks: bool) -> list[PayloadFile]:
    """Apply :func:`is_payload` to ``bin/`` and ``lib/`` of ``build_dir``, sorted; flat at the bundle's root.

    A symlink to another selected file of the same folder stays a symlink
    (tar only, ``symlinks=True``); any other is stored as the file it names.
    """
    found: dict[str, PayloadFile] = {}
    for rel, item in payload_items(build_dir):
        if item.is_dir():
            continue
        if not item.exists():
            raise BundleError(f"{item}: dangling symlink in the build")
        executable = os.access(item, os.X_OK)
        if not is_payload(rel, executable=executable):
            continue
        if item.name in (MANIFEST_NAME, SBOM_NAME):
            # The bundle's own manifest and SBOM sit at its root, where this file would go too.
            raise BundleError(
                f"{item}: a build file named {item.name} would take the place of the bundle's own "
                f"{item.name}; rename or remove it from {rel.partition('/')[0]}/"
            )
        if item.name in found:
            raise BundleError(
                f"{build_dir}: {item.name} is in both bin/ and lib/: a bundle holds them in one folder"
            )
        found[item.name] = PayloadFile(relpath=item.name, path=item)
    if symlinks:
        for name, pf in list(found.items()):
            if pf.path.is_symlink():
                target = str(pf.path.readlink())
                if (
                    "/" not in target
                    and "\\" not in target
                    and target in found
                    and found[target].path.parent == pf.path.parent
                ):
                    found[name] = PayloadFile(relpath=name, path=pf.path, link=target)
    return [found[k] for k in sorted(found)]


def added_payload(build_dir: Path, made: Sequence[str], payload: Sequence[PayloadFile]) -> list[PayloadFile]:
    """The programs and libraries among ``made`` (paths under ``build_dir`` another build of the leg made: its
    ``build_targets``), to go beside ``payload`` at the bundle's root; BundleError for a name ``payload`` has
    already (two builds making one file) or when none of them is a program or library."""
    have = {pf.relpath.lower() for pf in payload}
    added: list[PayloadFile] = []
    for rel in made:
        path = build_dir / rel
        if not path.is_file() or not is_payload(rel, executable=os.access(path, os.X_OK)):
            continue
        if path.name.lower() in have:
            raise BundleError(f"{path}: {path.name} is made by the base's build too: a bundle holds one")
        added.append(PayloadFile(relpath=path.name, path=path))
    if made and not added:
        raise BundleError(f"{build_dir}: the leg's targets made no program or library ({', '.join(made)})")
    return added


def _roots(build_dir: Path, out_dir: Path, record: LegRecord, toolchain: Toolchain) -> dict[str, str]:
    out = out_dir.resolve()
    roots = {"build": str(build_dir.resolve()), "out": str(out)}
    path = record.source.get("path")
    # A source inside the output folder reads <out>/..., however it got there
    # (cloned by the pipeline or given with --source), so a rebuild matches.
    if isinstance(path, str) and path and not Path(path).resolve().is_relative_to(out):
        roots["source"] = path
    for key in ("ROCM_PATH", "HIP_PATH", "CUDA_PATH", "VULKAN_SDK"):
        value = toolchain.env.get(key)
        if value and Path(value).is_absolute():
            roots.setdefault("toolchain", value)
    roots["home"] = str(Path.home())
    return roots


@dataclass(frozen=True, kw_only=True)
class StagedBundle:
    """A bundle's files staged under ``<out>/<leg>/bundle``, and what packing them needs besides.

    Written beside the stage (:data:`STAGED_STATE`) when the build stops there for the workflow's signing
    step, and read back by ``pack``: the manifest is complete but for its files, which are read from the
    stage when it is packed (a signature changes a file's bytes)."""

    leg: str
    name: str
    top: str
    # Bundle path -> where the file came from in the toolchain (the manifest's ``from_toolchain``).
    copied: Mapping[str, str]
    manifest: Mapping[str, Any]

    @property
    def zipped(self) -> bool:
        return self.name.endswith(".zip")

    def stage(self, out_dir: Path) -> Path:
        return out_dir / self.leg / STAGE_DIR

    def to_json(self) -> dict[str, Any]:
        return {
            "leg": self.leg,
            "name": self.name,
            "top": self.top,
            "copied": dict(self.copied),
            "manifest": dict(self.manifest),
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> StagedBundle:
        if (
            not isinstance(data, dict)
            or not all(isinstance(data.get(k), str) for k in ("leg", "name", "top"))
            or not isinstance(data.get("copied"), dict)
            or not isinstance(data.get("manifest"), dict)
        ):
            raise BundleError(f"{where}: not a staged bundle's state (leg, name, top, copied, manifest)")
        return cls(
            leg=data["leg"],
            name=data["name"],
            top=data["top"],
            copied=data["copied"],
            manifest=data["manifest"],
        )


# Beside the stage: what ``pack`` needs to make the bundle of a build that stopped at its stage.
STAGED_STATE = "staged.json"


def stage_bundle(
    *,
    leg: Leg,
    record: LegRecord,
    build_dir: Path,
    out_dir: Path,
    toolchain: Toolchain,
    tag: str,
    commit: str | None,
    added: tuple[Path, Sequence[str]] | None = None,
) -> StagedBundle:
    """Stage a successful build's bundle under ``<out>/<leg>/bundle``: its programs and libraries, the runtime
    they need from the toolchain, the licenses; and its manifest but for the files.

    ``added``: (another build folder, the files its targets made): a leg with a ``base`` stages the base's
    build (``build_dir``) and these on top (:func:`added_payload`)."""
    from pipeline.bundle.dist_owner import refuse_foreign_bundle

    name = bundle_file_name(leg, tag)
    refuse_foreign_bundle(
        out_dir, name, leg=leg.name
    )  # before any work: another leg's bundle is never replaced
    zipped = name.endswith(".zip")
    top = top_folder(tag, zipped=zipped)
    payload = collect_payload(build_dir, symlinks=not zipped)
    if not payload:
        raise BundleError(f"{build_dir}: nothing to bundle: no programs or shared libraries in bin/ or lib/")
    if added is not None:
        payload = sorted([*payload, *added_payload(added[0], added[1], payload)], key=lambda pf: pf.relpath)
    stage = fresh_stage(out_dir / leg.name / STAGE_DIR)
    (out_dir / leg.name / STAGED_STATE).unlink(missing_ok=True)
    for pf in payload:
        stage_file(stage, pf.relpath, pf.path, pf.link)
    runtime_root = toolchain_root(toolchain.details, toolchain.env)
    closure = complete_runtime(
        stage,
        os_name=leg.os,
        backend=leg.backend,
        targets=leg.targets,
        toolchain_root=runtime_root,
        arch=leg.arch,
    )
    source_tree = record.source.get("path")
    stage_licenses(stage, Path(source_tree) if isinstance(source_tree, str) and source_tree else None)
    # Where each copied runtime file came from, its license files copied in beside llama.cpp's.
    third_party = describe_third_party(
        stage, closure.copied, toolchain_root=usable_toolchain_root(runtime_root),
        details={"kind": toolchain.kind, **{k: toolchain.details[k] for k in TOOLCHAIN_KEYS if k in toolchain.details}},
    )  # fmt: skip
    manifest = build_manifest(
        name=name,
        leg=leg,
        tag=tag,
        source=record.source,
        commit=commit,
        toolchain=toolchain,
        cmake_args=record.cmake_args,
        roots=_roots(build_dir, out_dir, record, toolchain),
        files=[],
        root=top,
    )
    # Found neither in the bundle, the base system nor the toolchain: check-bundle names them.
    manifest["runtime"] = {"unresolved": [{"file": f, "library": lib} for f, lib in closure.unresolved]}
    manifest["third_party"] = third_party
    return StagedBundle(
        leg=leg.name, name=name, top=top, copied={c.path: c.origin for c in closure.copied}, manifest=manifest
    )


def save_staged(staged: StagedBundle, out_dir: Path) -> Path:
    """Write the staged bundle's state beside its stage, for ``pack``."""
    path = out_dir / staged.leg / STAGED_STATE
    atomic_write_bytes(path, manifest_bytes(staged.to_json()))
    return path


def load_staged(out_dir: Path, leg: str) -> StagedBundle:
    """The state a build that stopped at its stage left for ``pack``; BundleError when there is none."""
    path = out_dir / leg / STAGED_STATE
    if not path.is_file() or not (out_dir / leg / STAGE_DIR).is_dir():
        raise BundleError(
            f"{path}: no staged bundle of leg {leg} (a build signed by the workflow stops at its "
            "stage: run `build` first)"
        )
    raw = json_text.read_bytes(path, where=str(path), what="a staged bundle's state", error=BundleError)
    try:
        data = json_text.loads(raw, where=str(path), what="a staged bundle's state", error=BundleError)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{path}: not a staged bundle's state: {exc}") from None
    return StagedBundle.from_json(data, str(path))


def pack_staged(
    staged: StagedBundle,
    *,
    out_dir: Path,
    pack_cache: Path | None = None,
    signing: Mapping[str, Any] | None = None,
    signers: Mapping[str, str] | None = None,
) -> tuple[Path, PackStats]:
    """Pack a staged bundle into ``<out>/dist/<name>``, its manifest completed with the staged files as they
    are now; ``signing``: the manifest's signing entry (the publisher), ``signers``: each signed file's signer.

    ``pack_cache``: the packaging cache (compressed members by content, SBOMs by manifest), so files
    unchanged since the last run are not compressed again, nor the SBOM of the same manifest made again.
    """
    stage = staged.stage(out_dir)
    files, entries = archive_entries(
        staged_files(stage, symlinks=not staged.zipped), staged.copied, top=staged.top
    )
    for entry in files:
        if signers and (signer := signers.get(str(entry["path"]))):
            entry["signed_by"] = signer
    manifest = dict(staged.manifest)
    manifest["files"] = sorted(files, key=lambda f: str(f["path"]))
    if signing:
        manifest["signing"] = dict(signing)
    raw_manifest = manifest_bytes(manifest)
    entries.append(Entry(name=member_name(staged.top, MANIFEST_NAME), mode=MANIFEST_MODE, data=raw_manifest))
    # The SBOM lists every file above and the manifest; it travels inside the bundle and beside it.
    # Made once per manifest: a warm rebuild's manifest is the last run's, and so is its SBOM.
    sbom = cached_sbom(
        manifest,
        manifest_sha256=hashlib.sha256(raw_manifest).hexdigest(),
        manifest_name=MANIFEST_NAME,
        cache=pack_cache,
    )
    entries.append(Entry(name=member_name(staged.top, SBOM_NAME), mode=MANIFEST_MODE, data=sbom))
    # The name carries the tag (a manifest's, a record's): it must stay a file of dist/.
    target = confined(out_dir / DIST_DIR, staged.name, "bundle name", BundleError)
    stats = (write_zip if staged.zipped else write_tar_gz)(target, entries, cache=pack_cache)
    atomic_write_bytes(target.with_name(target.name + SBOM_SUFFIX), sbom)
    (out_dir / staged.leg / STAGED_STATE).unlink(missing_ok=True)
    return target, stats


# --------------------------------------------------------------------------
# Reading


def check_manifest(data: Any, where: str) -> dict[str, Any]:
    """``data`` if it is one of our manifests, else BundleError naming ``where``."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleError(f"{where}: foreign manifest: not a {FORMAT} manifest")
    version = data.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise BundleError(
            f"{where}: manifest format version {version!r} is not supported (up to {FORMAT_VERSION})"
        )
    files = data.get("files")
    if not isinstance(files, list) or not all(
        isinstance(f, dict) and isinstance(f.get("path"), str) for f in files
    ):
        raise BundleError(f"{where}: corrupt manifest: 'files' is not a list of file entries")
    root = data.get("root", "")
    if not isinstance(root, str) or "/" in root or "\\" in root or root in (".", ".."):
        raise BundleError(f"{where}: corrupt manifest: 'root' {root!r} is not one folder name")
    return data


def manifest_root(manifest: Mapping[str, Any]) -> str:
    """The archive's top folder holding the bundle's files ("" when they are at the top)."""
    return str(manifest.get("root") or "")


def is_manifest_member(name: str) -> bool:
    """Is the archive member ``name`` a bundle's manifest: at the top or in its one top folder?"""
    return name == MANIFEST_NAME or (name.count("/") == 1 and name.endswith("/" + MANIFEST_NAME))


def parse_manifest(raw: bytes, where: str) -> dict[str, Any]:
    try:
        data = json_text.loads(raw, where=where, what="the manifest", error=BundleError)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{where}: corrupt manifest: {exc}") from None
    return check_manifest(data, where)


def read_manifest_file(path: Path) -> dict[str, Any]:
    """The manifest in file ``path``, read only when its size is one a manifest may have."""
    return parse_manifest(
        json_text.read_bytes(path, where=str(path), what="the manifest", error=BundleError), str(path)
    )


def unpacked_root(folder: Path) -> Path:
    """An unpacked bundle's root: ``folder``, or its one top folder (``llama-<tag>/``) when that holds the manifest."""
    if (folder / MANIFEST_NAME).is_file():
        return folder
    entries = list(folder.iterdir())
    if len(entries) == 1 and (entries[0] / MANIFEST_NAME).is_file():
        return entries[0]
    return folder


def read_manifest(bundle_or_manifest: Path) -> dict[str, Any]:
    """The manifest of a bundle (.tar.gz/.zip), of an unpacked bundle folder, or a manifest.json."""
    path = bundle_or_manifest
    if path.is_dir():
        path = unpacked_root(path) / MANIFEST_NAME
    if not path.is_file():
        raise BundleError(f"{bundle_or_manifest}: no such bundle or manifest")
    if archive_kind(path) is None:
        try:
            return read_manifest_file(path)
        except BundleError:
            if path.suffix == ".json":
                raise
            raise BundleError(
                f"{path}: not a bundle (neither a .tar.gz, a .zip nor a manifest.json)"
            ) from None
    for member, data in read_members(path):
        if is_manifest_member(member.name) and data is not None:
            manifest = parse_manifest(data, f"{path}:{member.name}")
            if member.name != member_name(manifest_root(manifest), MANIFEST_NAME):
                raise BundleError(
                    f"{path}: corrupt bundle: {member.name} is not in the folder its manifest names"
                )
            return manifest
    raise BundleError(f"{path}: foreign bundle: no {MANIFEST_NAME} inside")
