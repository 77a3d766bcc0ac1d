"""TheRock's Python wheels on a PEP 503 / PEP 691 simple index (pure: text in, builds out).

A ROCm build from wheels is what ``pip install "rocm[libraries,devel]==V"``
installs: the ``rocm`` selector (it carries the ``rocm-sdk`` tool),
``rocm-sdk-core``, ``rocm-sdk-devel`` and the libraries, all of one version
``V`` (a PEP 440 pre-release such as ``10.1.0a20260807``, or a release). TheRock
publishes them in two layouts (its ``docs/packaging/python_packaging.md`` and
``rocm_sdk/_dist_info.py`` at 89553ce3746e):

- one index per GPU family (``.../v2/{family}/``, the index URL names the
  family): ``rocm-sdk-libraries-<family>`` holds the libraries and their
  kernels;
- one index for every GPU (``https://<stream>.repo.amd.com/rocm/whl-next/``
  since 2026-08-23, kpack-split): an arch-neutral ``rocm-sdk-libraries`` and
  one ``rocm-sdk-device-<target>`` per GPU target, as
  ``rocm[libraries,devel,device-gfx1100,...]`` installs them.

A version is a build of this index only when every one of those projects
has a file of it for the leg's OS; the build's publish time is the latest
upload time of those files (the build was complete then), from PEP 700's
``upload-time`` in the JSON form of the index. The HTML form (PEP 503) states
no time: its builds count from their build date, exactly as the tarball
index's builds without a time do (:func:`pipeline.rocm.policy.visible_builds`).

Only files the index gives a sha256 for are candidates (the install runs
``pip --require-hashes``), yanked files (PEP 592) are not, and a wheel is
preferred to an sdist of the same project and version.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

from pipeline.errors import IndexFormatError
from pipeline.names import is_family, is_rocm_version
from pipeline.rocm.index import parse_published
from pipeline.rocm.versions import RocmBuild, build_date
from pipeline.util import json_text

# What a client asks a simple index for (PEP 691): JSON first, HTML otherwise.
ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
# The ``rocm[libraries,devel]`` set; the libraries project is per GPU family on a per-family index, arch-neutral
# beside one device project per target on an index for every GPU.
SELECTOR = "rocm"
BASE_PROJECTS = (SELECTOR, "rocm-sdk-core", "rocm-sdk-devel")
LIBRARIES = "rocm-sdk-libraries-{family}"
SHARED_LIBRARIES = "rocm-sdk-libraries"
DEVICE = "rocm-sdk-device-{target}"
# The platform tags a wheel of each OS may carry (x86-64 only, as the legs are).
_PLATFORMS = {
    "linux": re.compile(r"^(?:many|musl)?linux(?:\d+)?(?:_\d+_\d+)?_x86_64$"),
    "windows": re.compile(r"^win_amd64$"),
}
_WHEEL = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$"
)
_SDIST = re.compile(r"^(?P<name>.+)-(?P<version>[^-]+)\.tar\.gz$")
_NORMALIZE = re.compile(r"[-_.]+")


def normalize(name: str) -> str:
    """A project name as PEP 503 compares it: lower case, runs of ``-_.`` as one ``-``."""
    return _NORMALIZE.sub("-", name).lower()


def projects_for(family: str, targets: Sequence[str] = ()) -> tuple[str, ...]:
    """The projects one build is made of, normalized: ``family``'s libraries on a per-family index; given the
    leg's GPU ``targets`` (an index for every GPU), the shared libraries and one device project per target."""
    if targets:
        return (*BASE_PROJECTS, SHARED_LIBRARIES, *(normalize(DEVICE.format(target=t)) for t in targets))
    return (*BASE_PROJECTS, normalize(LIBRARIES.format(family=family)))


def is_per_family(template: str) -> bool:
    """Whether a wheel index URL names one family's index (``{family}`` in it), not one for every GPU."""
    return "{family}" in template


def selector_extras(projects: Sequence[str]) -> str:
    """``libraries,devel`` and the ``device-<target>`` extras of ``projects``: what ``rocm[...]`` names."""
    devices = [p.removeprefix("rocm-sdk-") for p in projects if p.startswith("rocm-sdk-device-")]
    return ",".join(["libraries", "devel", *devices])


def project_url(index_url: str, project: str) -> str:
    """``<index>/<project>/``: where PEP 503 puts a project's page."""
    base = index_url if index_url.endswith("/") else index_url + "/"
    return f"{base}{project}/"


@dataclass(frozen=True, kw_only=True)
class IndexFile:
    """One file of a project page: its name, where it is, the index's sha256 and upload time."""

    file: str
    url: str
    sha256: str | None
    published: datetime | None
    yanked: bool = False


@dataclass(frozen=True, kw_only=True)
class WheelFile:
    """A file picked for a build: which project it belongs to, and the file."""

    project: str
    entry: IndexFile


@dataclass(frozen=True, kw_only=True)
class WheelBuild:
    """One version of the index that has every project's file for one OS: the build and its files."""

    build: RocmBuild
    files: tuple[WheelFile, ...]


# --------------------------------------------------------------------------
# File names


def parse_file_name(file: str) -> tuple[str, str, bool, tuple[str, str, str]] | None:
    """(project, version, is_wheel, (python, abi, platform) tags) of a wheel or sdist name; None otherwise."""
    if m := _WHEEL.fullmatch(file):
        return normalize(m["name"]), m["version"], True, (m["py"], m["abi"], m["plat"])
    if m := _SDIST.fullmatch(file):
        return normalize(m["name"]), m["version"], False, ("", "", "")
    return None


def fits(tags: tuple[str, str, str], os_name: str) -> bool:
    """Whether a wheel with these tags installs on ``os_name`` (x86-64; any CPython 3 or pure Python)."""
    python, _abi, platform = tags
    if not any(p.startswith(("py3", "cp3")) for p in python.split(".")):
        return False
    pattern = _PLATFORMS[os_name]
    return any(p == "any" or pattern.match(p) for p in platform.split("."))


# --------------------------------------------------------------------------
# Project pages


def _sha256_of(hashes: Any) -> str | None:
    if isinstance(hashes, Mapping):
        value = hashes.get("sha256")
        if isinstance(value, str) and re.fullmatch(r"[0-9a-fA-F]{64}", value):
            return value.lower()
    return None


def parse_json_page(text: str, *, where: str) -> list[IndexFile]:
    """A PEP 691 project page: ``files`` with ``filename``, ``url``, ``hashes``, PEP 700 ``upload-time``."""
    try:
        data = json_text.loads(text, where=where, what="the index page", error=IndexFormatError)
    except json.JSONDecodeError as exc:
        raise IndexFormatError(f"{where}: malformed JSON at line {exc.lineno}: {exc.msg}") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise IndexFormatError(f"{where}: not a PEP 691 project page (no 'files' list)")
    out: list[IndexFile] = []
    for i, item in enumerate(files):
        name = item.get("filename") if isinstance(item, dict) else None
        url = item.get("url") if isinstance(item, dict) else None
        if not isinstance(name, str) or not isinstance(url, str):
            raise IndexFormatError(f"{where}: files[{i}] has no string 'filename' and 'url'")
        out.append(
            IndexFile(
                file=name,
                url=urljoin(where, url),
                sha256=_sha256_of(item.get("hashes")),
                published=parse_published(item.get("upload-time"), where=f"{where}: files[{i}] upload-time"),
                yanked=bool(item.get("yanked")),
            )
        )
    return out


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.found.append((self._open, "".join(self._text).strip()))
            self._open = None


def parse_html_page(text: str, *, where: str) -> list[IndexFile]:
    """A PEP 503 project page: one anchor per file, its sha256 in the URL's ``#sha256=`` fragment."""
    parser = _Anchors()
    parser.feed(text)
    parser.close()
    out: list[IndexFile] = []
    for attrs, label in parser.found:
        href = attrs.get("href")
        if not href:
            continue
        url = urljoin(where, href)
        parts = urlsplit(url)
        fragment = dict(p.split("=", 1) for p in parts.fragment.split("&") if "=" in p)
        name = label or parts.path.rpartition("/")[2]
        out.append(
            IndexFile(
                file=name,
                url=url.split("#", 1)[0],
                sha256=_sha256_of(fragment),
                published=None,
                yanked="data-yanked" in attrs,
            )
        )
    return out


def parse_project_page(text: str, content_type: str, *, where: str) -> list[IndexFile]:
    """A project page in whichever form the index answered (its Content-Type says which)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == JSON_TYPE or kind == "application/json":
        return parse_json_page(text, where=where)
    return parse_html_page(text, where=where)


def families_url(template: str) -> str | None:
    """Where a per-family index lists its families: the URL up to ``{family}`` (None without one).

    TheRock's wheel index is one simple index per GPU family under one folder
    (``.../v2/{family}/``); that folder's page links each family's.
    """
    head, found, _ = template.partition("{family}")
    return head if found and head.endswith("/") else None


def parse_families(text: str, content_type: str, *, where: str) -> list[str]:
    """The GPU families a listing page names (links to ``<family>/``, or PEP 691 ``projects``), sorted.

    Anything that is not shaped like a family (a parent link, a file) is left out.
    """
    kind = content_type.split(";", 1)[0].strip().lower()
    names: list[str] = []
    if kind == JSON_TYPE or kind == "application/json":
        names = parse_project_names(text, content_type, where=where)
    else:
        parser = _Anchors()
        parser.feed(text)
        parser.close()
        for attrs, label in parser.found:
            href = attrs.get("href") or ""
            names.append(
                urlsplit(urljoin(where, href)).path.rstrip("/").rpartition("/")[2] or label.strip("/")
            )
    return sorted({n for n in names if is_family(n)})


def parse_project_names(text: str, content_type: str, *, where: str) -> list[str]:
    """The projects an index's root page lists (PEP 691 ``projects``, or PEP 503's one link per project)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == JSON_TYPE or kind == "application/json":
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise IndexFormatError(f"{where}: not a JSON listing") from None
        projects = data.get("projects") if isinstance(data, dict) else None
        return [p["name"] for p in projects or () if isinstance(p, dict) and isinstance(p.get("name"), str)]
    parser = _Anchors()
    parser.feed(text)
    parser.close()
    return [label for _attrs, label in parser.found if label]


# --------------------------------------------------------------------------
# Builds


def _pick(files: Sequence[IndexFile], os_name: str) -> IndexFile | None:
    """The file pip would install for ``os_name``: a fitting wheel (pure Python first), else an sdist."""
    wheels: list[tuple[tuple[int, str], IndexFile]] = []
    sdists: list[IndexFile] = []
    for entry in files:
        if entry.yanked or entry.sha256 is None:
            continue
        parsed = parse_file_name(entry.file)
        if parsed is None:
            continue
        if not parsed[2]:
            sdists.append(entry)
        elif fits(parsed[3], os_name):
            wheels.append(((0 if parsed[3][1] == "none" else 1, entry.file), entry))
    if wheels:
        return min(wheels, key=lambda pair: pair[0])[1]
    return min(sdists, key=lambda e: e.file) if sdists else None


def _by_version(files: Iterable[IndexFile], project: str) -> dict[str, list[IndexFile]]:
    versions: dict[str, list[IndexFile]] = {}
    for entry in files:
        parsed = parse_file_name(entry.file)
        if parsed is not None and parsed[0] == project and is_rocm_version(parsed[1]):
            versions.setdefault(parsed[1], []).append(entry)
    return versions


def wheel_builds(
    pages: Mapping[str, Sequence[IndexFile]],
    *,
    os_name: str,
    family: str,
    index_url: str,
    targets: Sequence[str] = (),
) -> list[WheelBuild]:
    """Every version of ``pages`` (project -> files) for which each project of the build (:func:`projects_for`)
    has a file for ``os_name``."""
    projects = projects_for(family, targets)
    per_project = {p: _by_version(pages.get(p, ()), p) for p in projects}
    builds: list[WheelBuild] = []
    for version in sorted(per_project[projects[0]]):
        picked: list[WheelFile] = []
        for project in projects:
            entry = _pick(per_project[project].get(version, ()), os_name)
            if entry is None:
                break
            picked.append(WheelFile(project=project, entry=entry))
        else:
            times = [f.entry.published for f in picked if f.entry.published is not None]
            # The build exists once its last file is up; with a time missing, its date decides.
            published = max(times) if len(times) == len(picked) else None
            build = RocmBuild(
                name=f"{SELECTOR}[{selector_extras(projects)}]=={version}",
                os=os_name,
                family=family,
                version=version,
                date=build_date(version, published),
                published=published,
                url=project_url(index_url, SELECTOR),
            )
            builds.append(WheelBuild(build=build, files=tuple(picked)))
    return builds
