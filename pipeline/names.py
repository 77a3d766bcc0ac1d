"""The names the pipeline shares between modules, each defined once (pure, standard library only).

matrix.toml's reader (``pipeline.inputs``, which the noxfile imports before
any virtualenv exists), the TheRock index parser, the source resolver, the
cache keys and the bundles all check the same kinds of names; one definition
each keeps them from disagreeing.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from datetime import date
from typing import TypeGuard

# The OSes a leg builds for; TheRock publishes for the first two only (ROCM_OSES).
OSES = ("linux", "windows", "macos")
ROCM_OSES = ("linux", "windows")
# The CPU architectures a leg builds for, in upstream's asset words; x64 unless a leg says otherwise.
ARCHES = ("x64", "arm64")
DEFAULT_ARCH = "x64"


def arch_problem(value: str) -> str | None:
    return None if value in ARCHES else "one of " + ", ".join(repr(a) for a in ARCHES)


# matrix.toml's backend names (the table of backend objects is pipeline.backends.BACKENDS, keyed by these).
BACKEND_NAMES = ("cpu", "cuda", "metal", "rocm", "vulkan")
# ROCm toolchain policies that are rules; anything else must be an explicit version. "weekly-stable"
# is a nightly build that holds still for a week; "stable" is TheRock's stable stream (its releases).
WEEKLY_STABLE = "weekly-stable"
STABLE = "stable"
POLICIES = (WEEKLY_STABLE, "weekly", "latest", STABLE)
# What matrix.toml's [rocm] policy means when it says nothing.
DEFAULT_POLICY = WEEKLY_STABLE
POLICY_CHOICES = ", ".join(f"'{p}'" for p in POLICIES)

# A leg name is the session, the cache-key component, the record folder and the
# GitHub matrix entry: letters, digits, '.', '_' and '-', starting with a
# letter or digit, no '--' (reserved as a separator in cache keys).
LEG_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._]|-(?!-))*$")
LEG_NAME_MAX = 64

# TheRock's name for a GPU family, as its index spells it: "gfx110X-all",
# "gfx1151", "gfx94X-dcgpu". Every '-'-separated part after the first starts
# with a letter, so the family/version split in a tarball name is unambiguous.
FAMILY_PATTERN = r"gfx[0-9A-Za-z]+(?:-[A-Za-z][0-9A-Za-z]*)*"
FAMILY = re.compile(FAMILY_PATTERN)
# One GPU target, as the compiler takes it: "gfx1100".
GPU_TARGET = re.compile(r"^gfx[0-9a-f]+$")

# A TheRock version. A nightly build's is X.Y.Z + a|rc + YYYYMMDD, the YYYYMMDD a real calendar
# date; a stable release's is X.Y.Z alone (TheRock's build_tools/compute_rocm_package_version.py,
# release type "release", at 89553ce3746e). The pattern is only the shape (an index's tarball names
# are matched with it); rocm_version_parts and rocm_release_parts are the rules.
ROCM_VERSION_PATTERN = r"\d+\.\d+\.\d+(?:(?:a|rc)\d{8})?"
_ROCM_VERSION_PARTS = re.compile(r"(\d+)\.(\d+)\.(\d+)(a|rc)(\d{4})(\d{2})(\d{2})")
_ROCM_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
ROCM_VERSION_EXAMPLE = "10.1.0a20260807"
ROCM_RELEASE_EXAMPLE = "7.14.0"
ROCM_VERSION_EXPECTED = (
    f"a version like {ROCM_VERSION_EXAMPLE!r} (X.Y.Z, 'a' or 'rc', a real date YYYYMMDD) "
    f"or a stable release like {ROCM_RELEASE_EXAMPLE!r}"
)
POLICY_EXPECTED = f"{POLICY_CHOICES} or {ROCM_VERSION_EXPECTED}"

# llama.cpp's release tags, and what a run may ask for.
BUILD_TAG = re.compile(r"^b(\d+)$")
UPSTREAM_TAG = re.compile(r"^(latest|b\d+)$")
# The tag of a run's bundle: a build tag, or a build tag with a mix suffix.
RUN_TAG = re.compile(r"^b\d+(?:-mix-[0-9a-f]{7,40})?$")
# Any tag that names a file (a --source build's own tag): safe in a file name.
SAFE_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
SAFE_TAG_MAX = 100

URL_SCHEMES = ("http", "https", "file")
URL_EXPECTED = "an http(s):// or file:// URL"
_URL_MAX = 4096


def url_problem(value: object) -> str | None:
    """Why ``value`` is not a URL the pipeline fetches from, or None: one rule for every file and flag.

    matrix.toml, a resolution, a toolchain pin, a flag: wherever a URL is
    read, it must be a string with an http(s):// or file:// scheme that
    ``urlsplit`` can take apart (an unclosed IPv6 bracket, a bad port), with
    a host for http(s), and no whitespace or control characters.
    """
    from urllib.parse import urlsplit

    if not isinstance(value, str) or not value:
        return URL_EXPECTED
    if len(value) > _URL_MAX or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        return f"{URL_EXPECTED} without spaces or control characters"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return f"a well-formed URL ({URL_EXPECTED})"
    if parts.scheme not in URL_SCHEMES or "://" not in value:
        return URL_EXPECTED
    if parts.scheme != "file" and not parts.hostname:
        return f"{URL_EXPECTED} with a host"
    return None


def is_safe_tag(tag: str) -> bool:
    """Whether ``tag`` may name a bundle file (``--tag`` with ``--source``, a tag ``git describe`` found)."""
    return SAFE_TAG.fullmatch(tag) is not None and len(tag) <= SAFE_TAG_MAX


# A full git commit id, and a sha256 digest: lowercase hex, nothing else.
COMMIT_SHA = re.compile(r"^[0-9a-f]{40}$")
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
GITHUB_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def safe_identity(text: str) -> str:
    """Squash ``text`` into characters safe in a cache key and a file name."""
    return _UNSAFE.sub("_", text).strip("_") or "unknown"


# What every TheRock build's toolchain identity starts with.
THEROCK_IDENTITY_PREFIX = "rocm-"


def therock_identity(version: str) -> str:
    """The toolchain identity of a TheRock build: ``rocm-<version>`` (records, cache keys, installs)."""
    return f"{THEROCK_IDENTITY_PREFIX}{version}"


def is_therock_identity(text: str) -> bool:
    """Whether ``text`` is already a TheRock build's identity (``rocm-...``), not a bare version."""
    return text.startswith(THEROCK_IDENTITY_PREFIX)


def is_family(text: str) -> bool:
    """Whether ``text`` is shaped like a TheRock family name."""
    return FAMILY.fullmatch(text) is not None


# The GPU architecture a family name covers: "gfx90" of "gfx90X-dcgpu", "gfx103" of "gfx103X-all", "gfx115"
# of "gfx1151" (a one-target family: its last character is the chip).
_FAMILY_ARCH = re.compile(r"^(gfx[0-9]+)X(?:-|$)")


def family_architecture(family: str) -> str:
    """The architecture prefix a family name covers (see ``_FAMILY_ARCH``): what its neighbours share."""
    name = family.split("-", 1)[0]
    m = _FAMILY_ARCH.match(family)
    return m.group(1) if m else name[:-1]


# Families TheRock retired, and the families that took their targets (ROCm/TheRock: 8f17ad65b, #2869,
# 2026-02-25, split gfx90X-dcgpu and gfx90X-all into a family per chip; 2722ebfa1, #3763, renamed gfx103X-dgpu;
# fb6de5126, #2198, gfx110X-dgpu).
RETIRED_FAMILIES: dict[str, tuple[str, ...]] = {
    "gfx90X-dcgpu": ("gfx90a", "gfx908"),
    "gfx90X-all": ("gfx90a", "gfx908", "gfx906"),
    "gfx103X-dgpu": ("gfx103X-all",),
    "gfx110X-dgpu": ("gfx110X-all",),
}


def family_suggestion(family: str, families: Sequence[str]) -> str:
    """``" (did you mean 'a' or 'b'?)"`` for a family an index lacks: the successors of a retired family
    (``RETIRED_FAMILIES``) the index lists, else the families it has for the same GPU architecture, else
    nothing (the error lists the index's families). The nearest spelling would offer gfx950-dcgpu for
    gfx90X-dcgpu, and gfx90a for gfx600: other GPUs."""
    listed = set(families)
    same = [f for f in RETIRED_FAMILIES.get(family, ()) if f in listed]
    if not same:
        arch = family_architecture(family)
        same = [f for f in families if f != family and family_architecture(f) == arch]
    if not same:
        return ""
    return " (did you mean " + " or ".join(repr(f) for f in same) + "?)"


_DOTTED_VERSION = re.compile(r"^\d+(?:\.\d+)*$")


def dotted_version(text: str) -> tuple[int, ...]:
    """``"2.35"`` -> ``(2, 35)``: a version of dot-separated numbers (a glibc symbol version, a leg's
    glibc_max, a Mach-O minos or macos_min), for comparing; ValueError on anything else."""
    if not _DOTTED_VERSION.match(text):
        raise ValueError(f"not a version like '2.35': {text!r}")
    return tuple(int(p) for p in text.split("."))


def dotted_text(version: tuple[int, ...]) -> str:
    """``(2, 35)`` -> ``"2.35"``: :func:`dotted_version` undone."""
    return ".".join(str(p) for p in version)


def rocm_version_parts(version: str) -> tuple[int, int, int, str, date] | None:
    """(major, minor, patch, 'a' or 'rc', build date) of a TheRock version; None when it is not one.

    The one rule every reader applies (matrix.toml, the flags, a resolution,
    an index, the simulator): month 13 or 30 February is not a version.
    """
    m = _ROCM_VERSION_PARTS.fullmatch(version)
    if m is None:
        return None
    major, minor, patch, stage, y, mo, d = m.groups()
    try:
        built = date(int(y), int(mo), int(d))
    except ValueError:
        return None
    return int(major), int(minor), int(patch), stage, built


def rocm_release_parts(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a TheRock stable release (``7.14.0``); None for anything else, a nightly too."""
    m = _ROCM_RELEASE.fullmatch(version)
    return None if m is None else (int(m[1]), int(m[2]), int(m[3]))


def is_rocm_version(text: str) -> bool:
    """Whether ``text`` is a TheRock version: a nightly's with a real build date, or a stable release's."""
    return rocm_version_parts(text) is not None or rocm_release_parts(text) is not None


def rocm_stream(policy: str) -> str:
    """The TheRock stream a policy's builds come from: ``stable`` and stable releases from the stable stream,
    everything else (the weekly rules, latest, a dated version) from the nightly one."""
    return STABLE if policy == STABLE or rocm_release_parts(policy) is not None else "nightly"


def rocm_version_date(version: str) -> date:
    """The build date at the end of a nightly TheRock version (ValueError for anything else, a stable release
    too: its version carries no date)."""
    parts = rocm_version_parts(version)
    if parts is None:
        raise ValueError(f"not a TheRock version: {version!r}")
    return parts[4]


def policy_problem(value: str) -> str | None:
    """What a ROCm policy was expected to be when ``value`` is not one, else None (matrix.toml's check)."""
    return None if value in POLICIES or is_rocm_version(value) else POLICY_EXPECTED


def parse_policy(text: str, *, where: str) -> str:
    """A policy name or a TheRock version; anything else is a UsageError naming ``where``."""
    from pipeline.errors import UsageError

    value = text.strip()
    if policy_problem(value) is not None:
        raise UsageError(f"{where}: expected {POLICY_EXPECTED}, got {text!r}")
    return value


def is_explicit(policy: str) -> bool:
    """Whether ``policy`` names one version rather than a rule."""
    return policy not in POLICIES


_DRIVE = re.compile(r"^[A-Za-z]:")
# A relative path of plain names ('/'-separated letters, digits, '.', '_', '-'): what a data file may name
# inside a folder of ours (an SDK pin's root, a redistributable manifest's relative_path).
_PLAIN_RELATIVE = re.compile(r"^[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*$")


def is_absolute_name(name: str) -> bool:
    """Whether a path written in an archive, a link or a data file is absolute on any OS: '/', '\\' or a drive."""
    return name.startswith(("/", "\\")) or _DRIVE.match(name) is not None


def is_plain_relative_path(text: object) -> TypeGuard[str]:
    """Whether ``text`` is a relative path of plain names that never climbs out ('..')."""
    return isinstance(text, str) and _PLAIN_RELATIVE.match(text) is not None and ".." not in text.split("/")


def member_name_problem(name: str) -> str | None:
    """Why an archive member name is unsafe to extract, or None when it is fine.

    One rule for toolchain archives and bundles alike.
    """
    if not name or "\x00" in name:
        return "empty or NUL in name"
    if is_absolute_name(name):
        return "absolute path"
    parts = re.split(r"[/\\]", name)
    if ".." in parts:
        return "'..' in path"
    return None


def bundle_member_problem(relpath: str) -> str | None:
    """Why a file the build made cannot be a bundle member (``relpath``: '/'-separated), or None.

    :func:`member_name_problem`'s rule, and no backslash: every reader of a
    bundle (``verify``, ``check-bundle``, the extractor, Windows itself)
    takes one for a folder separator, so ``odd\\back`` would be packed under
    one name and read back as ``odd/back``, a file its SBOM does not list.
    """
    if problem := member_name_problem(relpath):
        return problem
    if "\\" in relpath:
        return "a backslash in its name, which a bundle's readers and Windows take for a folder separator"
    return None


# --------------------------------------------------------------------------
# Bundle names, like upstream llama.cpp's release assets: ``llama-<tag>-bin-<os>-<variant>-<arch>``
# (``ubuntu-x64`` for CPU, ``ubuntu-vulkan-x64``, ``win-cuda-...-x64``, ``win-hip-radeon-x64``). A leg
# may set its own template (``bundle_name`` in matrix.toml, checked when the matrix loads); the default
# keeps the ROCm family in ROCm names, since one bundle per GPU family is built. The {variant} is the
# backend's own word (pipeline.backends), and pipeline.backends.render_name fills the template in.

DEFAULT_TEMPLATE = "llama-{tag}-bin-{os_label}{variant}-{arch}"
FIELDS = ("tag", "os_label", "variant", "backend", "family", "leg", "arch")
OS_LABELS = {"linux": "ubuntu", "windows": "win", "macos": "macos"}
_SAFE_FILE_NAME = re.compile(r"^[A-Za-z0-9._+-]+$")


def template_problem(template: str) -> str | None:
    """Why ``template`` is not a usable name template, or None (the check matrix.toml runs)."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        return f"a name template with {{fields}} ({exc})"
    unknown = [f for f in fields if f not in FIELDS]
    if unknown:
        return f"a name template using only {', '.join('{' + f + '}' for f in FIELDS)} (not {{{unknown[0]}}})"
    if "tag" not in fields:
        return "a name template containing {tag} (each run's bundle needs its own name)"
    probe = template.format(
        tag="b1", os_label="ubuntu", variant="-cpu", backend="cpu", family="gfx1100", leg="leg", arch="x64"
    )
    if not _SAFE_FILE_NAME.match(probe):
        return "a name template that gives a file name of letters, digits, '.', '_', '+' and '-'"
    return None


# The folder of a run's output where build writes its bundle and the workflow downloads every leg's.
DIST_DIR = "dist"
# A bundle's SBOM on the release, beside it: <bundle name> + this (pipeline.bundle.sbom writes it;
# the release collects it without loading the CycloneDX library).
SBOM_SUFFIX = ".cdx.json"
# The SBOM inside a bundle, beside manifest.json (named here so that packing a bundle whose SBOM is
# cached loads no CycloneDX library either).
SBOM_NAME = "sbom" + SBOM_SUFFIX


# Variables the pipeline reads that are the machine's or GitHub's own, not settings of a run (those are
# pipeline/inputs/settings.py's). Here, not there, so that the console (pipeline/util) reads them too.
GITHUB_ACTIONS = "GITHUB_ACTIONS"


def in_actions(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` is a GitHub Actions job's: the one test (the run's inputs, the runner's file
    commands and annotations, and the console's log decision all ask it)."""
    return environ.get(GITHUB_ACTIONS) == "true"


GITHUB_OUTPUT = "GITHUB_OUTPUT"
GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
GITHUB_SERVER_URL, GITHUB_RUN_ID = "GITHUB_SERVER_URL", "GITHUB_RUN_ID"
CC, CXX = "CC", "CXX"
CUDA_PATH = "CUDA_PATH"
XDG_CACHE_HOME = "XDG_CACHE_HOME"
# The Vulkan loader's driver (ICD) selection: the machine's, kept in a smoke run's scrubbed environment.
VULKAN_DRIVER_VARIABLES = ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES")
LOCALAPPDATA = "LOCALAPPDATA"
# A log's colours: FORCE_COLOR asks for them, NO_COLOR refuses them (no-color.org, force-color.org).
FORCE_COLOR, NO_COLOR = "FORCE_COLOR", "NO_COLOR"

# The first retry wait of every HTTP client, seconds (the run's PIPELINE_HTTP_BACKOFF default; the policy
# itself is pipeline/util/http_retry.py's RetryPolicy).
DEFAULT_BACKOFF = 1.0
