"""Parsing both index formats, filtering tarballs, paging URLs (no network)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from pipeline.errors import IndexFormatError
from pipeline.rocm.index import (
    IndexEntry,
    S3Page,
    builds_for,
    families_in,
    next_page_url,
    parse_html_index,
    parse_published,
    parse_s3_page,
    sniff_format,
    tarball_base,
    tarball_url,
)
from tests.support.therock_index import html_page, nightlies, s3_page

T = datetime(2026, 8, 7, 9, 30, tzinfo=UTC)
N1 = "therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz"
N2 = "therock-dist-windows-gfx1151-7.15.0a20260806.tar.gz"


def test_html_index_with_iso_times() -> None:
    entries = parse_html_index(html_page([(N1, T), (N2, T)]), where="idx")
    assert entries == [IndexEntry(N1, T), IndexEntry(N2, T)]


def test_html_index_with_epoch_times() -> None:
    entries = parse_html_index(html_page([(N1, T)], epoch=True), where="idx")
    assert entries[0].published == T


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-08-07T09:30:00Z", T),
        ("2026-08-07T09:30:00.000Z", T),
        ("2026-08-07T02:30:00-07:00", T),
        ("2026-08-07 09:30:00", T),  # naive: UTC
        (T.timestamp(), T),
        (int(T.timestamp()) * 1000, T),  # milliseconds
        (str(int(T.timestamp())), T),
        ("Fri, 07 Aug 2026 09:30:00 GMT", T),
        (None, None),
        ("", None),
    ],
)
def test_publish_times(value: object, expected: datetime | None) -> None:
    assert parse_published(value, where="x") == expected


@pytest.mark.parametrize("value", ["yesterday", True, [1], {"t": 1}, 1e30])
def test_bad_publish_times(value: object) -> None:
    with pytest.raises(IndexFormatError, match=r"^x: publish time"):
        parse_published(value, where="x")


def test_page_without_a_file_list() -> None:
    with pytest.raises(IndexFormatError, match="idx: no file list in the page"):
        parse_html_index("<html><body>Service moved</body></html>", where="idx")


def test_malformed_file_list_json() -> None:
    page = html_page([(N1, T)]).replace('"mtime"', "mtime", 1)
    with pytest.raises(IndexFormatError, match=r"idx: malformed file list JSON at line \d+"):
        parse_html_index(page, where="idx")


def test_truncated_html_page_is_malformed() -> None:
    page = html_page([(N1, T), (N2, T)])
    with pytest.raises(IndexFormatError, match="malformed file list JSON"):
        parse_html_index(page[: len(page) // 2], where="idx")


def test_file_list_of_the_wrong_shape() -> None:
    with pytest.raises(IndexFormatError, match="'files' is a dict"):
        parse_html_index('<script>const files = {"a": 1};</script>', where="idx")
    with pytest.raises(IndexFormatError, match=r"files\[1\] is not an object with a string 'name'"):
        parse_html_index('<script>const files = [{"name": "a"}, {"mtime": 1}];</script>', where="idx")


def test_entry_with_a_bad_time_names_the_entry_when_used() -> None:
    # Times are parsed on first use (a resolve uses a few hundred of 20,000 entries),
    # so the page parses and the entry's time raises, with the same message as ever.
    entries = parse_html_index(
        '<script>const files = [{"name": "a", "mtime": "soon"}];</script>', where="idx"
    )
    assert entries[0].name == "a"
    with pytest.raises(IndexFormatError, match=r"^idx: files\[0\] 'a': publish time 'soon' is not ISO-8601"):
        _ = entries[0].published
    assert "soon" in repr(entries[0])  # a repr never parses, so never raises


def test_a_bad_time_on_a_used_tarball_is_reported() -> None:
    page = html_page([(N2, T), (N1, "soon"), (N1 + ".sha256sum", T)])
    entries = parse_html_index(page, where="idx")
    with pytest.raises(IndexFormatError, match=rf"^idx: files\[1\] '{N1}': publish time 'soon'"):
        builds_for(entries, "http://h/idx/", "linux", "gfx110X-all")


def test_a_bad_time_on_an_ignored_entry_is_not_an_error() -> None:
    # Another os and family, a checksum, a page: none of them is used for linux gfx110X-all.
    page = html_page([(N1, T), (N2, "soon"), (N1 + ".sha256sum", [1]), ("index.html", True)])
    builds = builds_for(parse_html_index(page, where="idx"), "http://h/idx/", "linux", "gfx110X-all")
    assert [(b.name, b.published) for b in builds] == [(N1, T)]


def test_parsed_entries_equal_entries_with_known_times() -> None:
    entries = parse_html_index(html_page([(N1, T), (N2, None)], epoch=True), where="idx")
    assert entries == [IndexEntry(N1, T), IndexEntry(N2, None)]
    assert len({*entries, IndexEntry(N1, T)}) == 2
    name, published = entries[0]
    assert (name, published) == (N1, T)
    assert entries[0] != (N1, T)  # not a tuple


def test_s3_entry_with_a_bad_time_names_the_key_when_used() -> None:
    fast = parse_s3_page(  # S3's own layout: the regex path
        f"<ListBucketResult><Contents><Key>{N1}</Key><LastModified>yesterday</LastModified></Contents>"
        "</ListBucketResult>",
        where="s3",
    )
    tree = parse_s3_page(
        f"<ListBucketResult><Contents><LastModified>yesterday</LastModified><Key>{N1}</Key></Contents>"
        "</ListBucketResult>",
        where="s3",
    )
    for page in (fast, tree):
        with pytest.raises(IndexFormatError, match=rf"^s3: '{N1}': publish time 'yesterday'"):
            builds_for(page.entries, "http://h/", "linux", "gfx110X-all")


def test_s3_page() -> None:
    page = parse_s3_page(s3_page([(N1, T), (N2, T)], truncated=True, token="abc"), where="s3")
    assert page == S3Page(
        entries=[IndexEntry(N1, T), IndexEntry(N2, T)], truncated=True, continuation_token="abc"
    )


def test_s3_page_without_namespace() -> None:
    xml = (
        "<ListBucketResult><IsTruncated>false</IsTruncated>"
        f"<Contents><Key>{N1}</Key><LastModified>2026-08-07T09:30:00.000Z</LastModified></Contents>"
        "</ListBucketResult>"
    )
    assert parse_s3_page(xml, where="s3").entries == [IndexEntry(N1, T)]


def test_s3_page_in_another_shape_goes_through_the_tree_parser() -> None:
    # LastModified before Key, a prefixed namespace, an escaped key: not S3's own layout.
    xml = (
        '<?xml version="1.0"?><s3:ListBucketResult xmlns:s3="urn:x">'
        "<s3:IsTruncated>true</s3:IsTruncated><s3:NextMarker>a&amp;b</s3:NextMarker>"
        "<s3:Contents><s3:LastModified>2026-08-07T09:30:00Z</s3:LastModified><s3:Key>a&amp;b</s3:Key></s3:Contents>"
        "</s3:ListBucketResult>"
    )
    assert parse_s3_page(xml, where="s3") == S3Page(
        entries=[IndexEntry("a&b", T)], truncated=True, next_marker="a&b"
    )
    reordered = (
        "<ListBucketResult><Contents><LastModified>2026-08-07T09:30:00Z</LastModified>"
        f"<Key>{N1}</Key></Contents><Contents><Key>k&lt;2</Key></Contents></ListBucketResult>"
    )
    assert parse_s3_page(reordered, where="s3").entries == [IndexEntry(N1, T), IndexEntry("k<2", None)]


def test_escaped_keys_on_the_fast_path() -> None:
    page = parse_s3_page(s3_page([("a&b <c>", T)], truncated=True, token="t&1"), where="s3")
    assert page.entries == [IndexEntry("a&b <c>", T)] and page.continuation_token == "t&1"


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("<ListBucketResult><Contents><Key>a</Key>", "s3: malformed XML: no element found: line 1"),
        (
            "<ListBucketResult><Contents><Key>a</Kez></Contents></ListBucketResult>",
            "s3: malformed XML: mismatched tag",
        ),
        (
            "<ListBucketResult><Contents><Key></Key><LastModified>2026-08-07T09:30:00Z</LastModified></Contents>"
            "</ListBucketResult>",
            r"Contents\[0\] has no Key",
        ),
        (
            "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
            "s3: the bucket answered an error: AccessDenied Access Denied",
        ),
        ("<html/>", "expected an S3 ListBucketResult, got <html>"),
        ("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>", "IsTruncated is 'maybe'"),
        (
            "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
            r"Contents\[0\] has no Key",
        ),
    ],
)
def test_bad_s3_pages(xml: str, message: str) -> None:
    with pytest.raises(IndexFormatError, match=message):
        parse_s3_page(xml, where="s3")


def test_sniff_format() -> None:
    assert sniff_format(s3_page([])) == "s3"
    assert sniff_format("\ufeff  <ListBucketResult/>") == "s3"
    assert sniff_format("<Error><Code>NoSuchBucket</Code></Error>") == "s3"
    assert sniff_format(html_page([])) == "html"


def test_builds_for_keeps_only_the_os_and_family() -> None:
    names = [
        N1,
        N1 + ".sha256sum",
        "therock-dist-linux-gfx110X-all-10.1.0a.tar.gz",
        "therock-dist-linux-gfx110X-10.1.0a20260807.tar.gz",  # a family that is a prefix of ours
        "therock-dist-linux-gfx110X-all-extra-10.1.0a20260807.tar.gz",  # one that extends ours
        "therock-dist-windows-gfx110X-all-10.1.0a20260807.tar.gz",
        "therock-dist-linux-gfx1151-10.1.0a20260807.tar.gz",
        "v2/therock-dist-linux-gfx110X-all-7.15.0rc20260806.tar.gz",  # an S3 key in a folder
        N1,  # listed twice
    ]
    builds = builds_for([IndexEntry(n, T) for n in names], "http://h/idx/?prefix=x", "linux", "gfx110X-all")
    assert [(b.name, b.version, b.date, b.url) for b in builds] == [
        (N1, "10.1.0a20260807", date(2026, 8, 7), f"http://h/idx/{N1}"),
        (
            "therock-dist-linux-gfx110X-all-7.15.0rc20260806.tar.gz",
            "7.15.0rc20260806",
            date(2026, 8, 6),
            "http://h/idx/v2/therock-dist-linux-gfx110X-all-7.15.0rc20260806.tar.gz",
        ),
    ]
    assert all(b.os == "linux" and b.family == "gfx110X-all" and b.published == T for b in builds)


def test_families_in() -> None:
    entries = [IndexEntry(n, T) for n, _ in nightlies("linux", "gfx1151", "10.1.0", date(2026, 8, 1), 2)]
    entries += [IndexEntry(N1, T), IndexEntry(N2, T), IndexEntry("index.html", None)]
    assert families_in(entries, "linux") == ["gfx110X-all", "gfx1151"]
    assert families_in(entries, "windows") == ["gfx1151"]


@pytest.mark.parametrize(
    ("index", "base"),
    [
        ("https://h/tarball-multi-arch/", "https://h/tarball-multi-arch/"),
        ("https://h/tarball-multi-arch", "https://h/tarball-multi-arch/"),
        ("https://h/tarball-multi-arch/index.html", "https://h/tarball-multi-arch/"),
        ("https://bucket.h/?list-type=2&prefix=therock", "https://bucket.h/"),
        ("https://bucket.h", "https://bucket.h/"),
    ],
)
def test_tarball_base(index: str, base: str) -> None:
    assert tarball_base(index) == base
    assert tarball_url(index, "a b.tar.gz") == base + "a%20b.tar.gz"


def test_next_page_url_v2_token() -> None:
    page = S3Page(entries=[IndexEntry("k1", T)], truncated=True, continuation_token="t/1+=")
    assert next_page_url("http://h/?prefix=therock", page) == (
        "http://h/?prefix=therock&list-type=2&continuation-token=t%2F1%2B%3D"
    )
    # The token replaces the previous one rather than piling up.
    second = next_page_url(
        next_page_url("http://h/", page), S3Page(entries=[], truncated=True, continuation_token="t2")
    )
    assert second == "http://h/?list-type=2&continuation-token=t2"


def test_next_page_url_v1_marker() -> None:
    page = S3Page(entries=[IndexEntry("k1", T), IndexEntry("k2", T)], truncated=True)
    assert next_page_url("http://h/", page) == "http://h/?marker=k2"
    marked = S3Page(entries=[IndexEntry("k1", T)], truncated=True, next_marker="k9")
    assert next_page_url("http://h/?marker=k0", marked) == "http://h/?marker=k9"


def test_next_page_url_needs_a_continuation() -> None:
    with pytest.raises(IndexFormatError, match="no NextContinuationToken"):
        next_page_url("http://h/?list-type=2", S3Page(entries=[IndexEntry("k", T)], truncated=True))
    with pytest.raises(IndexFormatError, match="no keys and no marker"):
        next_page_url("http://h/", S3Page(entries=[], truncated=True))
