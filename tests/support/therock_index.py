"""Builders for TheRock index pages in tests: the HTML page and paged S3 XML.

The S3 handler plugs into tests/support/httpserver.py and pages the way S3's
ListObjectsV2 does (``IsTruncated``, ``NextContinuationToken``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from tests.support.httpserver import Request, Response

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"


def name(os_name: str, family: str, version: str) -> str:
    return f"therock-dist-{os_name}-{family}-{version}.tar.gz"


def nightlies(
    os_name: str,
    family: str,
    line: str,
    start: date,
    days: int,
    *,
    skip: Iterable[date] = (),
    stage: str = "a",
    publish_at: time = time(9, 30),
) -> list[tuple[str, datetime]]:
    """One build per day from ``start`` (minus ``skip``), published that day at ``publish_at`` UTC."""
    skipped = set(skip)
    out = []
    for k in range(days):
        day = start + timedelta(days=k)
        if day in skipped:
            continue
        version = f"{line}{stage}{day:%Y%m%d}"
        out.append((name(os_name, family, version), datetime.combine(day, publish_at, UTC)))
    return out


def html_page(entries: Sequence[tuple[str, object]], *, epoch: bool = False) -> str:
    """The HTML index: ``const files = [...]`` inside a script, like TheRock's page."""
    files = []
    for file_name, published in entries:
        if isinstance(published, datetime):
            mtime: object = published.timestamp() if epoch else published.isoformat().replace("+00:00", "Z")
        else:
            mtime = published
        files.append({"name": file_name, "mtime": mtime, "size": 123456789})
    return (
        "<!DOCTYPE html>\n<html><head><title>TheRock nightlies</title></head><body>\n"
        "<div id='list'></div>\n<script>\n"
        f"  const files = {json.dumps(files, indent=1)};\n"
        "  render(files);\n</script></body></html>\n"
    )


def s3_page(
    entries: Sequence[tuple[str, datetime]],
    *,
    truncated: bool = False,
    token: str | None = None,
    next_marker: str | None = None,
) -> str:
    parts = [
        f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{S3_NS}">',
        "<Name>therock-nightly-tarball</Name><Prefix></Prefix><MaxKeys>1000</MaxKeys>",
        f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>",
    ]
    if token:
        parts.append(f"<NextContinuationToken>{escape(token)}</NextContinuationToken>")
    if next_marker:
        parts.append(f"<NextMarker>{escape(next_marker)}</NextMarker>")
    for key, published in entries:
        stamp = published.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        parts.append(
            f"<Contents><Key>{escape(key)}</Key><LastModified>{stamp}</LastModified>"
            '<ETag>"0"</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>'
        )
    parts.append("</ListBucketResult>")
    return "\n".join(parts)


class S3Listing:
    """A route handler paging ``entries`` ``page_size`` at a time with continuation tokens.

    ``tokens_seen`` records the continuation tokens the client sent.
    """

    def __init__(self, entries: Sequence[tuple[str, datetime]], page_size: int = 1000) -> None:
        self.entries = sorted(entries)
        self.page_size = page_size
        self.tokens_seen: list[str | None] = []

    def __call__(self, req: Request) -> Response:
        query = parse_qs(req.query)
        token = query.get("continuation-token", [None])[0]
        self.tokens_seen.append(token)
        start = int(token.removeprefix("tok-")) if token else 0
        chunk = self.entries[start : start + self.page_size]
        more = start + self.page_size < len(self.entries)
        body = s3_page(chunk, truncated=more, token=f"tok-{start + self.page_size}" if more else None)
        return Response(200, body.encode(), {"Content-Type": "application/xml"})


def tarball_index_page(entries: Sequence[tuple[str, datetime]]) -> str:
    """The page TheRock's own generator writes for a tarball folder: build_tools/index_generation_s3_tar.py at
    ROCm/TheRock 691329a44615664d59a599093014c84074e1477c (the last change before the 2026-08-23 hosts, which
    #7547 left to the same server-side generation): title "Tarball index", and the script's
    ``const files = [{"name": ..., "mtime": <S3 LastModified as epoch seconds, a float>}]`` on one line,
    json.dumps' default separators, no size."""
    files = json.dumps(
        [{"name": file_name, "mtime": published.timestamp()} for file_name, published in entries]
    )
    return (
        '\n    <html>\n    <head>\n        <title>Tarball index</title>\n        <meta charset="utf-8"/>\n'
        f"        <script>\n            const files = {files};\n"
        "            function applyFilter(fileList, filter) {\n                if (filter === 'all') return fileList;\n"
        "                return fileList.filter(file => file.name.includes(filter));\n            }\n"
        "        </script>\n    </head>\n    <body>\n        <h1>Tarball index</h1>\n    </body>\n    </html>\n"
    )


# TheRock's Linux families as published since its rename of 2026-02-25 (ROCm/TheRock 8f17ad65b, #2869), from
# build_tools/github_actions/amdgpu_family_matrix.py at 89553ce3746eda74ade42557470d25e37c91b6f0; Windows lacks the
# data-centre families (gfx94X-dcgpu, gfx950-dcgpu, gfx125X-dcgpu).
TODAYS_LINUX_FAMILIES = (
    "gfx94X-dcgpu",
    "gfx110X-all",
    "gfx1151",
    "gfx120X-all",
    "gfx90a",
    "gfx950-dcgpu",
    "gfx900",
    "gfx90c",
    "gfx906",
    "gfx908",
    "gfx101X-dgpu",
    "gfx103X-all",
    "gfx1150",
    "gfx1152",
    "gfx1153",
    "gfx125X-dcgpu",
)
TODAYS_WINDOWS_FAMILIES = tuple(
    f for f in TODAYS_LINUX_FAMILIES if f not in ("gfx94X-dcgpu", "gfx950-dcgpu", "gfx125X-dcgpu")
)
# The names the rename retired; the old CDN still lists their last builds.
RETIRED_FAMILIES = ("gfx103X-dgpu", "gfx90X-dcgpu")
