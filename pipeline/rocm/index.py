"""TheRock's index: an HTML page with ``const files = [...]`` or an S3 XML listing.

The parsers here are pure (text in, entries out); fetching the pages is
:mod:`pipeline.rocm.index_fetch`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from pipeline.errors import IndexFormatError
from pipeline.rocm.versions import RocmBuild, build_date, parse_tarball, parse_tarball_name

if TYPE_CHECKING:
    pass


_FILES = re.compile(r"\b(?:const|let|var)\s+files\s*=\s*")
_XML_SNIFF = re.compile(r"^\s*(?:<\?xml[^>]*>\s*)?<(ListBucketResult|Error)\b")
# S3's own layout of a ListBucketResult page (see _s3_fast).
_S3_ROOT = re.compile(r"^\s*(?:<\?xml[^>]*\?>\s*)?<ListBucketResult[\s>]")
_S3_ENTRY = re.compile(r"<Contents>\s*<Key>([^<]*)</Key>\s*<LastModified>([^<]*)</LastModified>")
_S3_TRUNCATED = re.compile(r"<IsTruncated>([^<]*)</IsTruncated>")
_S3_TOKEN = re.compile(r"<NextContinuationToken>([^<]*)</NextContinuationToken>")
_S3_MARKER = re.compile(r"<NextMarker>([^<]*)</NextMarker>")
# Numbers above this are milliseconds: as seconds they would be past year 5000.
_EPOCH_MS = 100_000_000_000


# An entry whose publish time has been parsed (or was given parsed).
_PARSED: Any = object()


class IndexEntry:
    """One file of the index: its name (an S3 key may hold '/') and publish time.

    ``IndexEntry(name, published)`` is an entry with a known time. The parsers
    keep the time as the index wrote it and parse it on first use of
    :attr:`published`: an index has tens of thousands of entries and a resolve
    uses the few hundred of one os and family. A bad time therefore raises
    IndexFormatError, naming the index and the entry, when that entry is used;
    a bad time on an entry nobody uses (another family, a checksum) is ignored.
    """

    __slots__ = ("_pos", "_published", "_raw", "_where", "name")

    def __init__(self, name: str, published: datetime | None = None) -> None:
        self.name = name
        self._published = published
        self._raw = _PARSED
        self._where = ""
        self._pos: int | None = None

    @property
    def published(self) -> datetime | None:
        """When the index says the file was published: aware (UTC); None when it does not say."""
        raw = self._raw
        if raw is not _PARSED:
            self._published = _parse_mtime(raw, self._label())
            self._raw = _PARSED
        return self._published

    def _label(self) -> str:
        if self._pos is None:
            return f"{self._where}: {self.name!r}"
        return f"{self._where}: files[{self._pos}] {self.name!r}"

    def __iter__(self) -> Iterator[Any]:
        # ``name, published = entry`` as with the named tuple this class replaced.
        yield self.name
        yield self.published

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexEntry):
            return NotImplemented
        return self.name == other.name and self.published == other.published

    def __hash__(self) -> int:
        return hash((self.name, self.published))

    def __repr__(self) -> str:
        # Never parses: a repr must not raise on a bad time.
        if self._raw is not _PARSED:
            return f"IndexEntry({self.name!r}, mtime={self._raw!r})"
        return f"IndexEntry({self.name!r}, {self._published!r})"


# Past __init__: the parsers make one entry per file of the index.
_new_entry = object.__new__


def _unparsed(name: str, raw: Any, where: str, pos: int | None) -> IndexEntry:
    """An entry whose time ``raw`` (as the index wrote it) is parsed on first use."""
    entry = _new_entry(IndexEntry)
    entry.name = name
    entry._published = None
    entry._raw = _PARSED if raw is None else raw
    entry._where = where
    entry._pos = pos
    return entry


@dataclass(frozen=True, kw_only=True)
class S3Page:
    """One page of an S3 ``ListBucketResult``."""

    entries: list[IndexEntry]
    truncated: bool
    continuation_token: str | None = None
    next_marker: str | None = None


# --------------------------------------------------------------------------
# Pure parsing


def parse_published(value: Any, *, where: str) -> datetime | None:
    """A publish time as the index gives it: ISO-8601 text, Unix epoch or an HTTP date.

    Naive times are UTC. Returns an aware UTC datetime, or None for null/empty.
    """
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int | float):
            seconds = value / 1000 if value > _EPOCH_MS else value
            return datetime.fromtimestamp(seconds, UTC)
        if isinstance(value, str):
            text = value.strip()
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                if re.fullmatch(r"\d+(?:\.\d+)?", text):
                    return parse_published(float(text), where=where)
                from email.utils import parsedate_to_datetime  # rare; keeps CLI start-up light

                moment = parsedate_to_datetime(text)
            if moment.tzinfo is None:
                return moment.replace(tzinfo=UTC)
            return moment.astimezone(UTC)
    except (ValueError, TypeError, OverflowError, OSError):
        pass
    raise IndexFormatError(f"{where}: publish time {value!r} is not ISO-8601, a Unix epoch or an HTTP date")


def _parse_mtime(value: Any, where: str) -> datetime | None:
    """:func:`parse_published`, with a fast path for the ISO-8601 text most indexes use."""
    if type(value) is str:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return parse_published(value, where=where)
        if moment.tzinfo is UTC:
            return moment
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return parse_published(value, where=where)


def sniff_format(text: str) -> str:
    """'s3' for an S3 XML document, else 'html'."""
    return "s3" if _XML_SNIFF.match(text[:4096].lstrip("\ufeff")) else "html"


def parse_html_index(text: str, *, where: str) -> list[IndexEntry]:
    """Entries of the HTML index: the JSON array assigned to ``const files``."""
    m = _FILES.search(text)
    if m is None:
        raise IndexFormatError(f"{where}: no file list in the page (expected 'const files = [...]')")
    try:
        files, _end = json.JSONDecoder().raw_decode(text, m.end())
    except json.JSONDecodeError as exc:
        line = text.count("\n", 0, exc.pos) + 1
        raise IndexFormatError(f"{where}: malformed file list JSON at line {line}: {exc.msg}") from None
    if not isinstance(files, list):
        raise IndexFormatError(f"{where}: 'files' is a {type(files).__name__}, expected a JSON array")
    # The hot loop of a 20,000-entry index: names are checked here, times on first use.
    entries: list[IndexEntry] = []
    append = entries.append
    unparsed = _unparsed
    for i, item in enumerate(files):
        try:
            name = item["name"]
            mtime = item.get("mtime")
        except (TypeError, KeyError, AttributeError):
            name = None
        if type(name) is not str:
            raise IndexFormatError(f"{where}: files[{i}] is not an object with a string 'name': {item!r:.80}")
        append(unparsed(name, mtime, where, i))
    return entries


def _unescape(text: str) -> str:
    if "&" not in text:
        return text
    from xml.sax.saxutils import unescape

    return unescape(text, {"&quot;": '"', "&apos;": "'"})


def _s3_fast(text: str, where: str) -> S3Page | None:
    """The S3 page as S3 writes it (default namespace, Key before LastModified), by regex.

    A tree of a 1000-key page costs several times more than this. Returns None
    for any other shape so that the tree parser decides.
    """
    if not _S3_ROOT.match(text):
        return None
    pairs = _S3_ENTRY.findall(text)
    # Every Contents element must have been matched, or the page is not in the usual shape.
    if text.count("Contents") != 2 * len(pairs):
        return None
    entries: list[IndexEntry] = []
    append = entries.append
    for i, (key, modified) in enumerate(pairs):
        if not key:
            raise IndexFormatError(f"{where}: Contents[{i}] has no Key")
        append(_unparsed(_unescape(key), modified, where, None))
    truncated = _S3_TRUNCATED.search(text)
    token = _S3_TOKEN.search(text)
    marker = _S3_MARKER.search(text)
    return _s3_page(
        entries,
        truncated.group(1) if truncated else None,
        _unescape(token.group(1)) if token else None,
        _unescape(marker.group(1)) if marker else None,
        where,
    )


def _s3_page(
    entries: list[IndexEntry], truncated: str | None, token: str | None, marker: str | None, where: str
) -> S3Page:
    flag = (truncated or "false").strip().lower()
    if flag not in ("true", "false"):
        raise IndexFormatError(f"{where}: IsTruncated is {flag!r}, expected true or false")
    return S3Page(
        entries=entries,
        truncated=flag == "true",
        continuation_token=token or None,
        next_marker=marker or None,
    )


def parse_s3_page(text: str, *, where: str) -> S3Page:
    """One page of an S3 ``ListBucketResult`` (``Key``, ``LastModified``, paging fields)."""
    from xml.parsers import expat

    # Well-formedness first (C only, no tree): a truncated or garbled page is an error.
    try:
        expat.ParserCreate().Parse(text, True)
    except expat.ExpatError as exc:
        raise IndexFormatError(
            f"{where}: malformed XML: {expat.ErrorString(exc.code)}: line {exc.lineno}, column {exc.offset}"
        ) from None
    fast = _s3_fast(text, where)
    if fast is not None:
        return fast
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text)
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    local = root.tag[len(ns) :]
    if local == "Error":
        code = root.findtext(f"{ns}Code") or "?"
        message = root.findtext(f"{ns}Message") or ""
        raise IndexFormatError(f"{where}: the bucket answered an error: {code} {message}".rstrip())
    if local != "ListBucketResult":
        raise IndexFormatError(f"{where}: expected an S3 ListBucketResult, got <{local}>")
    key_tag, modified_tag, contents_tag = f"{ns}Key", f"{ns}LastModified", f"{ns}Contents"
    entries: list[IndexEntry] = []
    for contents in root:
        if contents.tag != contents_tag:
            continue
        key = modified = None
        for child in contents:
            if child.tag == key_tag:
                key = child.text
            elif child.tag == modified_tag:
                modified = child.text
        if not key:
            raise IndexFormatError(f"{where}: Contents[{len(entries)}] has no Key")
        entries.append(_unparsed(key, modified, where, None))
    return _s3_page(
        entries,
        root.findtext(f"{ns}IsTruncated"),
        root.findtext(f"{ns}NextContinuationToken"),
        root.findtext(f"{ns}NextMarker"),
        where,
    )


def tarball_base(index_url: str) -> str:
    """The folder the tarballs sit in: the index URL without query, file name or fragment."""
    parts = urlsplit(index_url)
    path = parts.path or "/"
    if not path.endswith("/"):
        head, _, last = path.rpartition("/")
        # ".../index.html" names a page in the folder; ".../tarball-multi-arch" is the folder.
        path = head + "/" if "." in last else path + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def tarball_url(base_url: str, name: str) -> str:
    """Where the tarball ``name`` (a file name or an S3 key) is downloaded from."""
    return tarball_base(base_url) + quote(name, safe="/")


def builds_for(entries: Iterable[IndexEntry], base_url: str, os: str, family: str) -> list[RocmBuild]:
    """The tarballs of one os and family, in index order; everything else is ignored."""
    base = tarball_base(base_url)
    prefix = f"therock-dist-{os}-{family}-"
    seen: set[str] = set()
    builds: list[RocmBuild] = []
    for entry in entries:
        name = entry.name
        # Cheap tests first: most entries are other families, oses and checksums. Only the
        # entries kept here have their publish time parsed (and a bad one reported).
        if prefix not in name:
            continue
        file_name = name.rpartition("/")[2]
        if not file_name.startswith(prefix) or name in seen:
            continue
        parsed = parse_tarball(file_name)
        if parsed is None or parsed[1] != family:
            continue
        seen.add(name)
        builds.append(
            RocmBuild(
                name=file_name,
                os=os,
                family=family,
                version=parsed[2],
                date=build_date(parsed[2], entry.published),
                published=entry.published,
                # A matched file name is URL-safe; only an S3 folder may need quoting.
                url=base + (quote(name, safe="/") if "/" in name else name),
            )
        )
    return builds


def families_in(entries: Iterable[IndexEntry], os: str) -> list[str]:
    """Every family the index has tarballs for on ``os``, sorted (for error messages)."""
    found: set[str] = set()
    for entry in entries:
        parsed = parse_tarball_name(entry.name.rpartition("/")[2])
        if parsed is not None and parsed[0] == os:
            found.add(parsed[1])
    return sorted(found)


def next_page_url(url: str, page: S3Page) -> str:
    """The URL of the page after ``page`` (ListObjectsV2 token, else V1 marker)."""
    parts = urlsplit(url)
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if k not in ("continuation-token", "marker", "start-after")
    ]
    v2 = any(k == "list-type" and v == "2" for k, v in query)
    if page.continuation_token:
        if not v2:
            query.append(("list-type", "2"))
        query.append(("continuation-token", page.continuation_token))
    elif v2:
        raise IndexFormatError(f"{url}: IsTruncated is true but there is no NextContinuationToken")
    else:
        # V1 lists NextMarker only with a delimiter; otherwise the last key is the marker.
        marker = page.next_marker or (page.entries[-1].name if page.entries else None)
        if marker is None:
            raise IndexFormatError(f"{url}: IsTruncated is true but the page has no keys and no marker")
        query.append(("marker", marker))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))
