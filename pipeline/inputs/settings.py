"""Every input that more than one command (or the noxfile) uses, declared once.

In the spirit of nox's ``_options.py``: one :class:`Setting` per input, with
its flag, environment variable(s), ``matrix.toml`` key, parser (the
validator), default and help. One precedence rule, applied in one place
(:func:`pick`): the flag, then the environment, then ``matrix.toml``, then
the default. The docs' table of overrides (docs/settings.md) is generated from
this table (``python -m pipeline settings --markdown``) and a test keeps them equal.

Environment variable names that the pipeline reads appear here and nowhere
else in ``pipeline/``; this module reads no environment itself: the one
module that builds the run's inputs (:mod:`pipeline.inputs.run_inputs`) hands it one.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import UsageError
from pipeline.names import (
    DEFAULT_BACKOFF,
    DEFAULT_POLICY,
    ROCM_RELEASE_EXAMPLE,
    ROCM_VERSION_EXAMPLE,
    UPSTREAM_TAG,
    parse_policy,
    url_problem,
)

Parse = Callable[[str, str], Any]


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One input of a run: where it can come from, how it is checked, what it means."""

    # The attribute of RunInputs (or the argparse dest).
    name: str
    # The command-line flag, if the input has one.
    flag: str | None = None
    # Older spellings of the flag, still accepted (a renamed flag keeps working in scripts people wrote).
    flag_aliases: tuple[str, ...] = ()
    # Environment variables read, the first one set wins.
    env: tuple[str, ...] = ()
    # Dotted matrix.toml key, if the file can set it.
    matrix_key: str | None = None
    # (text, where) -> value; raises UsageError naming ``where``.
    parse: Parse
    help: str
    # The value when nothing sets it, of the type ``parse`` returns (None: unset).
    default: Any = None
    # How the default reads in --help and the docs, when the value alone does not say it: a default
    # computed from other inputs (the clock, the cache home) or what an unset value means.
    default_shown: str | None = None
    metavar: str | None = None

    @property
    def default_display(self) -> str:
        """The default as --help and the docs show it."""
        if self.default_shown is not None:
            return self.default_shown
        if self.default is None:
            return "none"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)

    @property
    def env_var(self) -> str:
        """The first (main) environment variable, or '' when there is none."""
        return self.env[0] if self.env else ""


# --------------------------------------------------------------------------
# Parsers: each takes the text and where it came from (a flag or a variable).


def parse_text(text: str, where: str) -> str:
    value = text.strip()
    if not value:
        raise UsageError(f"{where}: expected a non-empty value")
    return value


def parse_url(text: str, where: str) -> str:
    """A URL by the one rule of :func:`pipeline.names.url_problem` (a bad IPv6 host fails here)."""
    value = text.strip()
    if (problem := url_problem(value)) is not None:
        if problem.startswith("a well-formed"):
            raise UsageError(f"{where}: malformed URL {text!r}")
        raise UsageError(f"{where}: expected {problem}, got {text!r}")
    return value


def parse_policy_text(text: str, where: str) -> str:
    return parse_policy(text, where=where)


def parse_moment_text(text: str, where: str) -> Any:
    from pipeline.util.timeutil import parse_now

    return parse_now(text, where=where)


def parse_run_tag(text: str, where: str) -> str:
    # Not stripped: a tag names files, and "b12 " is not "b12".
    if not UPSTREAM_TAG.fullmatch(text):
        raise UsageError(f"{where} {text!r}: expected 'latest' or a llama.cpp tag like 'b10327'")
    return text


def _parse_amount(text: str, where: str, *, unit: str, limit: float, zero: bool) -> float:
    """A finite number up to ``limit`` of ``unit``, from 0 (``zero``) or above it; UsageError naming ``where``."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    above_floor = value >= 0 if zero else value > 0
    if not math.isfinite(value) or not above_floor or value > limit:
        span = f"between 0 and {limit:g}" if zero else f"above 0 and up to {limit:g}"
        raise UsageError(f"{where}: expected {unit} {span}, got {text!r}")
    return value


def _parse_seconds(text: str, where: str, limit: float) -> float:
    return _parse_amount(text, where, unit="seconds", limit=limit, zero=True)


def parse_backoff(text: str, where: str) -> float:
    return _parse_seconds(text, where, MAX_BACKOFF)


def parse_wait(text: str, where: str) -> float:
    return _parse_seconds(text, where, MAX_WAIT_LOCK)


def parse_budget(text: str, where: str) -> float:
    return _parse_seconds(text, where, MAX_RETRY_BUDGET)


def parse_heartbeat(text: str, where: str) -> float:
    # 0 turns it off; below a second, a heartbeat is a flood (thousands of lines in one build).
    value = _parse_seconds(text, where, MAX_HEARTBEAT)
    if 0 < value < MIN_HEARTBEAT:
        raise UsageError(
            f"{where}: expected 0 (no heartbeat) or {MIN_HEARTBEAT:g} to {MAX_HEARTBEAT:g} seconds, got {text!r}"
        )
    return value


_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def parse_bool(text: str, where: str) -> bool:
    """``true/false``, ``1/0``, ``yes/no`` (any case); anything else is refused, never taken for false."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise UsageError(f"{where}: expected true, false, 1, 0, yes or no, got {text!r}")


# What a stale ROCm build does (rocm.stale).
STALE_ACTIONS = ("warn", "fail")


def parse_stale_action(text: str, where: str) -> str:
    value = text.strip()
    if value not in STALE_ACTIONS:
        raise UsageError(f"{where}: expected one of {', '.join(STALE_ACTIONS)}, got {value!r:.60}")
    return value


def parse_days(text: str, where: str) -> float:
    return _parse_amount(text, where, unit="days", limit=MAX_CACHE_DAYS, zero=False)


def parse_gigabytes(text: str, where: str) -> float:
    return _parse_amount(text, where, unit="gigabytes", limit=MAX_CACHE_GB, zero=False)


def parse_legs(text: str, where: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.replace(",", " ").split() if part.strip())


MAX_BACKOFF = 60.0
# The public GitHub REST API.
DEFAULT_API_URL = "https://api.github.com"
# Where a mix pin's ``owner/name`` repository is fetched from, unless the setting says otherwise.
DEFAULT_GIT_URL_TEMPLATE = "https://github.com/{repo}"
# A day: longer than any build, short enough that a typo does not wait forever.
MAX_WAIT_LOCK = 86400.0
# A day: past that, a "budget" is a hang by another name.
MAX_RETRY_BUDGET = 86400.0
# Local cache limits (prune --local): ten years and a petabyte are typos, not limits.
MAX_CACHE_DAYS = 3650.0
MAX_CACHE_GB = 1_000_000.0
DEFAULT_CACHE_MAX_AGE_DAYS = 30.0
DEFAULT_CACHE_MAX_GB = 40.0
DEFAULT_RETRY_BUDGET = 300.0
# An hour: a CI log silent for longer looks hung to whoever reads it (and to a job timeout).
MAX_HEARTBEAT = 3600.0
MIN_HEARTBEAT = 1.0
DEFAULT_HEARTBEAT = 60.0


# --------------------------------------------------------------------------
# The table

MATRIX = Setting(
    name="matrix",
    flag="--matrix",
    env=("PIPELINE_MATRIX",),
    parse=parse_text,
    metavar="PATH",
    default="matrix.toml",
    help="the matrix file",
)
NOW = Setting(
    name="now",
    flag="--now",
    env=("PIPELINE_NOW",),
    parse=parse_moment_text,
    metavar="ISO",
    default_shown="the clock",
    help="the run's moment, ISO-8601 (naive is UTC); a past moment replays that run",
)
ROCM_VERSION = Setting(
    name="rocm_version",
    flag="--rocm-version",
    env=("PIPELINE_ROCM_VERSION",),
    matrix_key="rocm.policy",
    parse=parse_policy_text,
    metavar="POLICY",
    default=DEFAULT_POLICY,
    help=f"ROCm toolchain policy: weekly-stable, weekly, latest, stable or a version like {ROCM_VERSION_EXAMPLE} "
    f"(a stable release: {ROCM_RELEASE_EXAMPLE})",
)
INDEX_URL = Setting(
    name="index_url",
    flag="--index-url",
    env=("PIPELINE_ROCM_INDEX_URL",),
    matrix_key="rocm.index_url",
    parse=parse_url,
    metavar="URL",
    default_shown="matrix.toml's [[rocm.hosts]], by build date",
    help="one TheRock index (HTML or S3 XML listing) for every build, instead of the hosts by date",
)
TAG = Setting(
    name="tag",
    flag="--tag",
    env=("PIPELINE_TAG",),
    matrix_key="source.tag",
    parse=parse_run_tag,
    metavar="TAG",
    default_shown="latest",
    help="llama.cpp tag of the run: b<digits> or latest",
)
RESOLVED = Setting(
    name="resolved",
    flag="--resolved",
    env=("PIPELINE_RESOLVED",),
    parse=parse_text,
    metavar="PATH_OR_JSON",
    default_shown="none (resolve now)",
    help="the run's resolution from `resolve`: a file or inline JSON",
)
ROCM_PATH = Setting(
    name="rocm_path",
    flag="--rocm-path",
    env=("PIPELINE_ROCM_PATH",),
    parse=parse_text,
    metavar="DIR",
    default_shown="none (download TheRock's build)",
    help="an installed ROCm the rocm legs build with instead of TheRock's download (resolve then fetches no index)",
)
SOURCE_ARCHIVE = Setting(
    name="source_archive",
    flag="--source-archive",
    env=("PIPELINE_SOURCE_ARCHIVE",),
    parse=parse_text,
    metavar="PATH",
    default_shown="none (check out the source)",
    help="the run's source archive from `source` (its manifest beside it): legs extract it instead of cloning",
)
OUT = Setting(
    name="out",
    flag="--out",
    env=("PIPELINE_OUT",),
    parse=parse_text,
    metavar="DIR",
    default=Path("out"),
    help="output folder: records, bundles, the resolution, reports",
)
CCACHE_DIR = Setting(
    name="ccache_dir",
    flag="--ccache-dir",
    # Its older name: "cache" alone also names the cache home, so the flag now says which cache.
    flag_aliases=("--cache-dir",),
    env=("CCACHE_DIR",),
    parse=parse_text,
    metavar="DIR",
    default_shown="<cache home>/ccache/<leg>",
    help="the leg's ccache directory",
)
REMOTE_CACHE = Setting(
    name="remote_cache",
    flag="--remote-cache",
    matrix_key="ccache.remote",
    parse=lambda t, w: t.strip(),
    metavar="URL",
    help='ccache remote storage (redis:// or http://; "" turns it off)',
)
LEGS = Setting(
    name="legs",
    flag="--legs",
    env=("PIPELINE_LEGS",),
    parse=parse_legs,
    metavar="LEGS",
    default=(),
    default_shown="every leg",
    help="the legs of the run (names separated by spaces or commas)",
)
CACHE_HOME = Setting(
    name="cache_home",
    env=("PIPELINE_CACHE_HOME",),
    parse=parse_text,
    # run_inputs.default_cache_home computes it; this says the same for --help and the docs.
    default_shown="$XDG_CACHE_HOME/llama-pipeline, else ~/.cache/llama-pipeline",
    help="where every pipeline cache lives (on Windows the default is %LOCALAPPDATA%\\llama-pipeline)",
)
DOWNLOAD_CACHE = Setting(
    name="download_cache",
    env=("PIPELINE_DOWNLOAD_CACHE",),
    parse=parse_text,
    default_shown="<cache home>/downloads",
    help="downloaded toolchain archives",
)
TOOLCHAIN_DIR = Setting(
    name="toolchain_dir",
    env=("PIPELINE_TOOLCHAIN_DIR",),
    parse=parse_text,
    default_shown="<cache home>/toolchains",
    help="installed toolchains",
)
CACHE_MAX_AGE = Setting(
    name="cache_max_age",
    flag="--max-age",
    env=("PIPELINE_CACHE_MAX_AGE_DAYS",),
    parse=parse_days,
    metavar="DAYS",
    default=DEFAULT_CACHE_MAX_AGE_DAYS,
    help="prune --local: remove downloads, toolchains and packaging-cache entries unused for this many days",
)
CACHE_MAX_SIZE = Setting(
    name="cache_max_size",
    flag="--max-size",
    env=("PIPELINE_CACHE_MAX_GB",),
    parse=parse_gigabytes,
    metavar="GB",
    default=DEFAULT_CACHE_MAX_GB,
    help="prune --local: most gigabytes each of those three caches keeps (least recently used removed first)",
)
GIT_URL_TEMPLATE = Setting(
    name="git_url_template",
    env=("PIPELINE_GIT_URL_TEMPLATE",),
    parse=parse_text,
    default=DEFAULT_GIT_URL_TEMPLATE,
    help="where a mix pull request's repository is fetched from",
)
HTTP_BACKOFF = Setting(
    name="http_backoff",
    env=("PIPELINE_HTTP_BACKOFF",),
    parse=parse_backoff,
    default=DEFAULT_BACKOFF,
    help="first retry wait of every HTTP client, seconds (doubles each retry)",
)
GITHUB_TOKEN = Setting(
    name="github_token",
    env=("GITHUB_TOKEN", "GH_TOKEN"),
    parse=parse_text,
    help="GitHub API token (prune)",
)
GITHUB_REPOSITORY = Setting(
    name="repo",
    flag="--repo",
    env=("GITHUB_REPOSITORY",),
    parse=parse_text,
    metavar="OWNER/NAME",
    help="the GitHub repository",
)
GITHUB_API_URL = Setting(
    name="api_url",
    flag="--api-url",
    env=("GITHUB_API_URL",),
    parse=parse_url,
    metavar="URL",
    default=DEFAULT_API_URL,
    help="GitHub REST API root (GitHub Enterprise, tests)",
)

# Authenticode signing of the Windows legs ([signing] in matrix.toml; docs/signing.md).
SIGNING_PFX = Setting(
    name="signing_pfx",
    flag="--signing-pfx",
    env=("PIPELINE_SIGNING_PFX",),
    parse=parse_text,
    metavar="PFX",
    default_shown="none (sign on Actions in [signing] repository only)",
    help="the local signer's PKCS#12 file (certificate and key): a leg [signing] covers is signed with it by osslsigncode",
)
SIGNING_PASSWORD = Setting(
    name="signing_password",
    env=("PIPELINE_SIGNING_PASSWORD",),
    parse=parse_text,
    help="the password of the local signer's PKCS#12 file (never a flag: a command line is visible to every process)",
)
SIGNING_CA = Setting(
    name="signing_ca",
    flag="--signing-ca",
    env=("PIPELINE_SIGNING_CA",),
    parse=parse_text,
    metavar="PEM",
    default_shown="the system's roots",
    help="the root certificates (PEM) Authenticode signatures and their timestamps must chain to",
)
SIGNING_TIMESTAMP_URL = Setting(
    name="signing_timestamp_url",
    env=("PIPELINE_SIGNING_TIMESTAMP_URL",),
    parse=parse_url,
    metavar="URL",
    help="an RFC 3161 timestamp authority the local signer stamps each signature with (it then outlives the certificate)",
)

NIGHTLY_STATUS = Setting(
    name="status",
    flag="--status",
    env=("PIPELINE_NIGHTLY_STATUS",),
    parse=parse_text,
    metavar="STATUS",
    help="how the nightly ended: success or failure (alert)",
)
STALE_DAYS = Setting(
    name="stale_days",
    flag="--stale-days",
    env=("PIPELINE_STALE_DAYS",),
    matrix_key="github.stale_days",
    parse=parse_days,
    metavar="DAYS",
    default=2.0,
    help="deadman: the newest published nightly release older than this many days opens the stale issue",
)
ROCM_MAX_AGE = Setting(
    name="rocm_max_age",
    env=("PIPELINE_ROCM_MAX_AGE",),
    matrix_key="rocm.max_age_days",
    parse=parse_days,
    metavar="DAYS",
    default=14.0,
    help="a ROCm build older than this many days (its build date against the run's moment) is stale",
)
ROCM_STALE = Setting(
    name="rocm_stale",
    env=("PIPELINE_ROCM_STALE",),
    matrix_key="rocm.stale",
    parse=parse_stale_action,
    metavar="ACTION",
    default="warn",
    help="what a stale ROCm build does: warn (the log, the record, the report) or fail (exit 14)",
)
FORCE = Setting(
    name="force",
    env=("PIPELINE_FORCE",),
    parse=parse_bool,
    default=False,
    help="build even when the release for the tag exists (release-exists --force)",
)
WAIT_LOCK = Setting(
    name="wait_lock",
    flag="--wait-lock",
    env=("PIPELINE_WAIT_LOCK",),
    parse=parse_wait,
    metavar="SECONDS",
    default=0.0,
    default_shown="0 (fail at once)",
    help="how long to wait for another run holding the leg's output folder or a toolchain install",
)
HEARTBEAT = Setting(
    name="heartbeat",
    env=("PIPELINE_HEARTBEAT",),
    parse=parse_heartbeat,
    metavar="SECONDS",
    default=DEFAULT_HEARTBEAT,
    help="in a CI log, a 'still building' line after this many seconds without a finished step (0: none)",
)
DEBUG = Setting(
    name="debug",
    flag="--debug",
    env=("PIPELINE_DEBUG",),
    parse=parse_bool,
    default=False,
    help="show the traceback behind an error line (the one-line message stays)",
)
HTTP_RETRY_BUDGET = Setting(
    name="http_retry_budget",
    env=("PIPELINE_HTTP_RETRY_BUDGET",),
    parse=parse_budget,
    default=DEFAULT_RETRY_BUDGET,
    help="most seconds one HTTP request spends waiting between its retries",
)

SETTINGS: tuple[Setting, ...] = (
    MATRIX,
    NOW,
    ROCM_VERSION,
    INDEX_URL,
    TAG,
    RESOLVED,
    ROCM_PATH,
    SOURCE_ARCHIVE,
    OUT,
    CCACHE_DIR,
    REMOTE_CACHE,
    LEGS,
    CACHE_HOME,
    DOWNLOAD_CACHE,
    TOOLCHAIN_DIR,
    CACHE_MAX_AGE,
    CACHE_MAX_SIZE,
    GIT_URL_TEMPLATE,
    HTTP_BACKOFF,
    HTTP_RETRY_BUDGET,
    GITHUB_TOKEN,
    GITHUB_REPOSITORY,
    GITHUB_API_URL,
    NIGHTLY_STATUS,
    STALE_DAYS,
    ROCM_MAX_AGE,
    ROCM_STALE,
    FORCE,
    WAIT_LOCK,
    HEARTBEAT,
    DEBUG,
    SIGNING_PFX,
    SIGNING_PASSWORD,
    SIGNING_CA,
    SIGNING_TIMESTAMP_URL,
)

# The interrupt tests' hook (processes/pause_points.py), not a setting of a run: where a run pauses.
PAUSE_AT, PAUSE_DIR = "PIPELINE_PAUSE_AT", "PIPELINE_PAUSE_DIR"


# --------------------------------------------------------------------------
# The one precedence rule


# pick's "no default given": the setting's own applies (None is a default of its own).
_OWN_DEFAULT: Any = object()


@dataclass(frozen=True)
class Picked:
    """A setting's value and where it came from (a flag, a variable, a matrix key, or 'default')."""

    value: Any
    where: str


def pick(
    setting: Setting,
    *,
    flag: str | None = None,
    environ: Mapping[str, str],
    matrix: Any = None,
    matrix_where: str | None = None,
    default: Any = _OWN_DEFAULT,
) -> Picked:
    """Flag, then environment, then matrix.toml, then the setting's default; text values are parsed and checked.

    An empty flag or variable counts as not given. ``matrix`` is the already
    validated matrix.toml value (None when the file does not set it).
    ``default``: only for a default that depends on other inputs (the cache
    home); otherwise the setting's own.
    """
    if flag is not None and flag.strip() and setting.flag:
        return Picked(setting.parse(flag, setting.flag), setting.flag)
    for var in setting.env:
        text = environ.get(var, "")
        if text.strip():
            return Picked(setting.parse(text, var), var)
    if matrix is not None:
        return Picked(matrix, matrix_where or f"matrix.toml {setting.matrix_key}")
    return Picked(setting.default if default is _OWN_DEFAULT else default, "default")


def add_flag(
    parser: argparse.ArgumentParser, setting: Setting, *, help: str | None = None, **kwargs: Any
) -> None:
    """Add ``setting``'s flag with its help text and where its default comes from.

    The flag's value reaches argparse as text (default None): it is checked
    by :func:`pick`, so a bad flag and a bad variable get the same message.
    """
    assert setting.flag is not None, setting.name
    parser.add_argument(
        setting.flag,
        *setting.flag_aliases,
        dest=setting.name,
        metavar=setting.metavar,
        help=f"{help or setting.help} (default: {default_text(setting)})",
        **kwargs,
    )


def default_text(setting: Setting) -> str:
    """'$VAR, else matrix.toml's key, else DEFAULT' for help texts and the docs."""
    parts = [f"${var}" for var in setting.env]
    if setting.matrix_key:
        parts.append(f"matrix.toml's {setting.matrix_key}")
    parts.append(setting.default_display)
    return ", else ".join(parts)


def _markdown_text(text: str) -> str:
    # A help text's placeholders (b<digits>, <cache home>) would read as HTML tags and vanish.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown_table() -> str:
    """The docs' table of overrides (docs/settings.md), generated from :data:`SETTINGS`."""
    rows = ["| setting | flag | environment | matrix.toml | default |", "| --- | --- | --- | --- | --- |"]
    for s in SETTINGS:
        env = ", ".join(f"`{v}`" for v in s.env) or "-"
        flag = f"`{s.flag}`" if s.flag else "-"
        if s.flag_aliases:
            flag += f" (also {', '.join(f'`{a}`' for a in s.flag_aliases)}, its older name)"
        rows.append(
            f"| {_markdown_text(s.help)} | {flag} | {env} | "
            f"{f'`{s.matrix_key}`' if s.matrix_key else '-'} | {_markdown_text(s.default_display)} |"
        )
    return "\n".join(rows) + "\n"
