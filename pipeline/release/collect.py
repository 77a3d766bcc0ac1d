"""What a run's output folder holds for its release: leg records, bundles, and the files written for it.

The file-reading half of ``publish`` and ``alert``: records are read as
plain JSON (fields another issue adds, like ``bundle_check``, come through),
bundles are hashed, and ``SHA256SUMS`` and the notes are written atomically
under ``OUT/release/`` so the job can keep them as an artifact.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import PublishError
from pipeline.names import DIST_DIR, SBOM_SUFFIX
from pipeline.processes.locks import is_held
from pipeline.release.plan import (
    SUMS_NAME,
    LegResult,
    LocalAsset,
    leg_result,
    sha256sums_text,
    source_asset_name,
)
from pipeline.results.record import RECORD_NAME, leg_lock, record_problem
from pipeline.util.fsutil import atomic_write_text, confined, file_digest

RELEASE_DIR = "release"
NOTES_NAME = "notes.md"


def read_results(out: Path) -> dict[str, LegResult]:
    """Every ``OUT/*/record.json`` by leg; PublishError naming the file when one is unreadable."""
    results: dict[str, LegResult] = {}
    for path in sorted(out.glob(f"*/{RECORD_NAME}")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PublishError(f"{path}: not a readable record: {exc}") from None
        if not isinstance(data, dict):
            raise PublishError(f"{path}: not a leg record (not a JSON object)")
        if problem := record_problem(data):
            raise PublishError(f"{path}: bad record: {problem}")
        if data.get("status") == "running" and not is_held(leg_lock(path.parent)):
            # Its run died without ending the record: never a success to publish.
            data = {**data, "status": "interrupted"}
        result = leg_result(data, where=str(path))
        if result.bundle is not None:
            bundle_path(out, result.bundle, str(path))  # refused here, before anything is planned
        if result.leg in results:
            raise PublishError(f"{path}: a second record for leg {result.leg}")
        results[result.leg] = result
    return results


def bundles_present(out: Path, results: dict[str, LegResult]) -> set[str]:
    """The records' bundle paths that exist as files in ``OUT/dist/``."""
    return {r.bundle for r in results.values() if r.bundle and bundle_path(out, r.bundle).is_file()}


def bundle_path(out: Path, bundle: str, where: str = "record") -> Path:
    """Where a record's ``bundle`` is: ``OUT/dist/<name>``, never anywhere else.

    A record is another job's artifact, not trusted state: its ``bundle``
    must be ``dist/<name>`` as ``build`` writes it (or the bare name), and
    the file must lie inside ``OUT/dist/`` (the workflow downloads every
    leg's bundle there), so a record naming ``/etc/hostname`` or
    ``../../x`` cannot put a file from outside the run on the release.
    """
    name = bundle.removeprefix(f"{DIST_DIR}/")
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        raise PublishError(f"{where}: bundle {bundle!r} is not {DIST_DIR}/<name> in the output folder")
    return confined(out / DIST_DIR, name, f"{where}: bundle", PublishError)


def find_source_archive(out: Path, tag: str, given: Path | None) -> Path | None:
    """The run's source archive: ``given`` (``--source-archive``), else ``OUT/source/`` as ``source`` wrote it.

    Its manifest must name ``tag``: a release carries the source of its own bundles.
    """
    from pipeline.source.archive import archive_name, read_manifest

    path = given if given is not None else out / "source" / archive_name(tag)
    if given is None and not path.is_file():
        return None
    manifest = read_manifest(path)
    if manifest.tag != tag:
        raise PublishError(f"source archive {path}: it is {manifest.tag}'s source, the release is {tag}'s")
    return path


def refuse_oversized(out: Path, present: Sequence[LegResult], source_archive: Path | None = None) -> None:
    """PublishError naming every file of the release that GitHub would refuse for its size, before any hashing
    or request: each leg's bundle (with its size and five largest files), its SBOM, the source archive."""
    from pipeline.bundle.asset_size import oversize_problem

    problems: list[str] = []
    for result in present:
        assert result.bundle is not None  # coverage checked it
        path = bundle_path(out, result.bundle, f"leg {result.leg}")
        sbom = path.with_name(path.name + SBOM_SUFFIX)
        for candidate in (path, sbom) if sbom.is_file() else (path,):
            if problem := oversize_problem(result.leg, candidate):
                problems.append(problem)
    if source_archive is not None and (problem := oversize_problem("source", source_archive)):
        problems.append(problem)
    if problems:
        more = f" (and {len(problems) - 1} more: {'; '.join(problems[1:])})" if len(problems) > 1 else ""
        raise PublishError(f"{problems[0]}{more}; nothing was uploaded")


def release_files(
    out: Path,
    present: Sequence[LegResult],
    notes: str,
    *,
    tag: str | None = None,
    source_archive: Path | None = None,
) -> list[LocalAsset]:
    """Hash the bundles (the SBOM beside each, and the source archive, as ``llama.cpp-source-<tag>.tar.gz``),
    write ``SHA256SUMS`` and the notes under ``OUT/release/``; the assets to upload."""
    assets: list[LocalAsset] = []
    for result in present:
        assert result.bundle is not None and result.bundle_file_name is not None  # coverage checked it
        path = bundle_path(out, result.bundle, f"leg {result.leg}")
        size, digest = file_digest(path)
        assets.append(LocalAsset(name=result.bundle_file_name, sha256=digest, size=size, path=str(path)))
        # The bundle's SBOM goes beside it on the release (and into SHA256SUMS), when the build wrote one.
        sbom = path.with_name(path.name + SBOM_SUFFIX)
        if sbom.is_file():
            size, digest = file_digest(sbom)
            assets.append(LocalAsset(name=sbom.name, sha256=digest, size=size, path=str(sbom)))
    if source_archive is not None and tag is not None:
        size, digest = file_digest(source_archive)
        assets.append(
            LocalAsset(name=source_asset_name(tag), sha256=digest, size=size, path=str(source_archive))
        )
    names = [a.name for a in assets]
    if dupes := sorted({n for n in names if names.count(n) > 1} | ({SUMS_NAME} & set(names))):
        raise PublishError(f"two legs made bundles of one name: {', '.join(dupes)}")
    folder = out / RELEASE_DIR
    sums = folder / SUMS_NAME
    atomic_write_text(sums, sha256sums_text([(a.name, a.sha256) for a in assets]))
    atomic_write_text(folder / NOTES_NAME, notes)
    size, digest = file_digest(sums)
    assets.append(LocalAsset(name=SUMS_NAME, sha256=digest, size=size, path=str(sums)))
    return assets
