"""A bundle's SBOM, made once per manifest: kept in the packaging cache under what makes it.

The SBOM is a function of the manifest alone (:mod:`pipeline.bundle.sbom`: its bytes' sha256 and its
name) and of the code that writes it: that module and the CycloneDX library with the serializer it
writes through. A warm rebuild's manifest is the same bytes as the last run's (nothing in it changes
between two runs of the same inputs), so its SBOM is read back from the cache instead of being made
again: that spares loading the library, 0.04 s of CPU of every warm build. The key names the manifest's
sha256 and name, the module's own bytes and the libraries' installed versions, all found without
importing them; where a library's version cannot be told (no dist-info beside it), nothing is cached.

A cached SBOM is kept only if it is a CycloneDX document naming the manifest's sha256 (the manifest is
one of its components); it is written atomically and touched when reused, for ``prune --local``, which
keeps it with the compressed members (:mod:`pipeline.toolchain.local_caches`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.names import SBOM_SUFFIX
from pipeline.util.fsutil import atomic_write_bytes

# The module that writes the SBOM, and (top-level package, distribution) of each library it writes with.
WRITER_MODULE = "pipeline.bundle.sbom"
LIBRARIES = (("cyclonedx", "cyclonedx_python_lib"), ("py_serializable", "py_serializable"))


def writer_identity() -> str | None:
    """What the SBOM's bytes depend on besides the manifest: the writer module's bytes and the libraries'
    installed versions (their dist-info folders' names); None when any of them cannot be told."""
    parts: list[str] = []
    spec = importlib.util.find_spec(WRITER_MODULE)
    if spec is None or spec.origin is None:
        return None
    try:
        parts.append(hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest())
    except OSError:
        return None
    for package, distribution in LIBRARIES:
        found = importlib.util.find_spec(package)
        if found is None or found.origin is None:
            return None
        site = Path(found.origin).parent.parent
        infos = sorted(p.name for p in site.glob(f"{distribution}-*.dist-info"))
        if len(infos) != 1:
            return None  # none (an install without metadata), or two versions side by side
        parts.append(infos[0])
    return "\0".join(parts)


def sbom_key(manifest_sha256: str, manifest_name: str, writer: str) -> str:
    """The cache key of the SBOM of one manifest, as one writer makes it."""
    return hashlib.sha256(f"sbom\0{manifest_sha256}\0{manifest_name}\0{writer}".encode()).hexdigest()


def cache_path(cache: Path, key: str) -> Path:
    """Where the SBOM of ``key`` is kept: beside the compressed members, under the key's first two digits."""
    return cache / key[:2] / f"{key}{SBOM_SUFFIX}"


def _is_sbom_of(raw: bytes, manifest_sha256: str) -> bool:
    """Is ``raw`` a CycloneDX document that lists the manifest of this sha256 (a component's hash)?"""
    if manifest_sha256.encode() not in raw:
        return False
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("bomFormat") == "CycloneDX"


def cached_sbom(
    manifest: Mapping[str, Any], *, manifest_sha256: str, manifest_name: str, cache: Path | None
) -> bytes:
    """The SBOM of ``manifest`` (:func:`pipeline.bundle.sbom.sbom_json`), from ``cache`` when it was made
    there for the same manifest by the same writer; made (and kept there) otherwise."""
    writer = writer_identity() if cache is not None else None
    path = (
        cache_path(cache, sbom_key(manifest_sha256, manifest_name, writer))
        if cache is not None and writer
        else None
    )
    if path is not None:
        try:
            raw = path.read_bytes()
        except OSError:
            raw = b""
        if raw and _is_sbom_of(raw, manifest_sha256):
            with contextlib.suppress(OSError):
                os.utime(path)  # last use, for whoever prunes the folder
            return raw
    # Here, not at the top: the CycloneDX library is loaded only when an SBOM is made.
    from pipeline.bundle.sbom import sbom_json

    raw = sbom_json(manifest, manifest_sha256=manifest_sha256, manifest_name=manifest_name)
    if path is not None:
        with contextlib.suppress(OSError):  # a cache that cannot be written is no failure: the SBOM is made
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, raw)
    return raw
