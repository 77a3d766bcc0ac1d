"""Whose bundle already stands at ``<out>/dist/<name>``: a build never replaces another leg's.

matrix.toml refuses two legs with one bundle name (``Matrix.check_bundle_names``),
but an output folder outlives its matrix: a leg renamed, a template changed,
a second matrix file built into the same ``--out``. The SBOM written beside
every bundle names the leg that made it (``llama-pipeline:name``), and it is
small, so the owner is read there rather than from the archive; a leg's
record naming the file is the second witness (a bundle whose SBOM was lost).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.errors import BundleError
from pipeline.names import DIST_DIR, SBOM_SUFFIX
from pipeline.results.record import RECORD_NAME

# An SBOM or record beyond this is nobody's we wrote for the guard's purpose: not read.
_MAX_BYTES = 64 * 1024 * 1024
_LEG_PROPERTY = "llama-pipeline:name"


def _json(path: Path) -> Any:
    try:
        if path.stat().st_size > _MAX_BYTES:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None


def _sbom_leg(sbom: Path) -> str | None:
    data = _json(sbom)
    component = (data.get("metadata") or {}).get("component") if isinstance(data, dict) else None
    properties = component.get("properties") if isinstance(component, dict) else None
    for prop in properties if isinstance(properties, list) else []:
        if (
            isinstance(prop, dict)
            and prop.get("name") == _LEG_PROPERTY
            and isinstance(prop.get("value"), str)
        ):
            return str(prop["value"])
    return None


def bundle_owner(out: Path, name: str, *, leg: str) -> str | None:
    """Another leg than ``leg`` that ``<out>/dist/<name>`` belongs to, by its SBOM or a record; None if none."""
    target = out / DIST_DIR / name
    if not target.exists() and not target.is_symlink():
        return None  # nothing there to replace
    owner = _sbom_leg(target.with_name(name + SBOM_SUFFIX))
    if owner is not None:
        return owner if owner != leg else None
    for record in sorted(out.glob(f"*/{RECORD_NAME}")):
        data = _json(record)
        if (
            isinstance(data, dict)
            and data.get("bundle") == f"{DIST_DIR}/{name}"
            and isinstance(data.get("leg"), str)
            and data["leg"] != leg
        ):
            return str(data["leg"])
    return None


def refuse_foreign_bundle(out: Path, name: str, *, leg: str) -> None:
    """BundleError, before any packaging, when ``<out>/dist/<name>`` is another leg's bundle."""
    if (owner := bundle_owner(out, name, leg=leg)) is not None:
        raise BundleError(
            f"{leg}: {out / DIST_DIR / name} is leg {owner!r}'s bundle; refusing to replace it (give {leg!r} a "
            "bundle_name of its own, or build it into another --out)"
        )
