"""JSON that someone else wrote (an SBOM, a manifest, an index page), read within bounds.

``json.loads`` raises RecursionError for an array nested a few thousand deep
and a huge document can exhaust memory: both are a bad file, not a bug of
the reader, so both become the caller's own one-line error. The caller keeps
phrasing a plain syntax error (``json.JSONDecodeError``) its own way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.errors import PipelineError
from pipeline.util.byte_sizes import human_bytes

# Far above any manifest, SBOM or index page the pipeline writes or reads (a ROCm bundle's SBOM
# is well under 1 MiB), far below what parsing could not hold in memory.
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024


def too_big(size: int, where: str, what: str, limit: int = MAX_DOCUMENT_BYTES) -> str | None:
    """The error line for a ``what`` of ``size`` bytes over ``limit``, or None when it is within it."""
    if size <= limit:
        return None
    return f"{where}: {what} is {human_bytes(size)}, over the {human_bytes(limit)} it may be; refused unread"


def loads(
    raw: bytes | str, *, where: str, what: str, error: type[PipelineError], limit: int = MAX_DOCUMENT_BYTES
) -> Any:
    """``raw`` parsed; ``error`` for one over ``limit`` bytes or nested too deep to parse.

    ``UnicodeDecodeError`` and ``json.JSONDecodeError`` pass through for the caller to phrase.
    """
    if message := too_big(len(raw), where, what, limit):
        raise error(message)
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"{where}: {what} is nested too deep to read") from None


def read_bytes(
    path: Path, *, where: str, what: str, error: type[PipelineError], limit: int = MAX_DOCUMENT_BYTES
) -> bytes:
    """``path``'s bytes, refused (``error``) before reading when the file is over ``limit``."""
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if message := too_big(max(len(data), path.stat().st_size), where, what, limit):
        raise error(message)
    return data
