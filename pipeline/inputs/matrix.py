"""matrix.toml -> frozen, typed objects.

The file is validated once, before any work starts. Every error names the
file, the dotted key and what was expected, with "did you mean" for near
misses. Only the standard library is used here so that ``noxfile.py`` can
import this module before any virtualenv exists.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from pipeline.errors import ConfigError
from pipeline.inputs.pins import DEFAULT_CUDA_LINE, ToolchainPins, parse_toolchain_pins
from pipeline.inputs.runners import DEFAULT_MACOS_MIN, default_runner, glibc_problem, runner_glibc
from pipeline.inputs.settings import DEFAULT_ROCM_INDEX, MATRIX
from pipeline.names import (
    ARCHES,
    BACKENDS,
    COMMIT_SHA,
    DEFAULT_ARCH,
    DEFAULT_POLICY,
    GITHUB_REPO,
    GPU_TARGET,
    LEG_NAME,
    LEG_NAME_MAX,
    OSES,
    POLICIES,
    ROCM_OSES,
    ROCM_VERSION,
    UPSTREAM_TAG,
    is_family,
    template_problem,
    url_problem,
)

# "toolchain": a string: check for toolchains installed from a verified archive (pipeline.ccache.compiler_check).
COMPILER_CHECKS = ("content", "mtime", "toolchain")

DEFAULT_SOURCE_REPO = "https://github.com/ggml-org/llama.cpp"

_SIZE = re.compile(r"^\d+(?:\.\d+)?\s*[KMGT]i?B?$|^\d+$", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class MixPin:
    """One pull request merged onto the base tag, pinned to an exact commit."""

    repo: str
    number: int
    sha: str

    @property
    def line(self) -> str:
        return f"{self.repo}#{self.number}:{self.sha}"


@dataclass(frozen=True, kw_only=True)
class SourceConfig:
    repo: str = DEFAULT_SOURCE_REPO
    tag: str = "latest"
    min_age_hours: float = 6.0
    mix: tuple[MixPin, ...] = ()


# Where a ROCm leg's toolchain comes from: TheRock's tarball of the family, or its Python wheels.
ROCM_SOURCES = ("tarball", "wheels")
# TheRock's nightly wheel index: one PEP 503 simple index per GPU family ({family} is the leg's).
DEFAULT_WHEEL_INDEX = "https://rocm.nightlies.amd.com/v2/{family}/"


@dataclass(frozen=True, kw_only=True)
class RocmConfig:
    policy: str = DEFAULT_POLICY
    index_url: str = DEFAULT_ROCM_INDEX
    source: str = "tarball"
    # A PEP 503 / 691 simple index; "{family}" in it becomes the leg's TheRock family.
    wheel_index_url: str = DEFAULT_WHEEL_INDEX

    def wheel_index_for(self, family: str) -> str:
        """The wheel index a leg of ``family`` resolves against."""
        return self.wheel_index_url.replace("{family}", family)


@dataclass(frozen=True, kw_only=True)
class CcacheConfig:
    max_size: str = "5G"
    compiler_check: str = "content"
    evict_older_than_days: float = 7.0
    # A run that stored fewer new objects than this need not upload its cache.
    save_min_new_entries: int = 1
    # One warm build's ccache (the cpu leg's, measured): the budget planner's floor per leg.
    warm_size: str = "27Mi"
    remote: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReportConfig:
    # Under this hit rate with an unchanged toolchain, a leg gets a warning.
    hit_rate_warning: float = 0.9


@dataclass(frozen=True, kw_only=True)
class GitHubConfig:
    keep: int = 2
    # GitHub evicts past 10 GB per repository; warn well before.
    cache_limit_bytes: int = 10 * 1024**3
    cache_warn_fraction: float = 0.8
    # deadman: no published nightly for longer than this opens the stale issue.
    stale_days: float = 2.0


@dataclass(frozen=True, kw_only=True)
class RocmFamily:
    """One GPU family of [rocm_families]: the name TheRock's index gives its tarballs, and its targets."""

    therock: str
    targets: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Leg:
    """One bundle to build: the unit of session, cache key and record."""

    name: str
    backend: str
    os: str
    runner: str
    # The CPU architecture the bundle runs on (names.ARCHES): part of its name, record and matrix entry.
    arch: str = DEFAULT_ARCH
    cmake_args: tuple[str, ...] = ()
    family: str | None = None
    targets: tuple[str, ...] = ()
    cuda_architectures: tuple[str, ...] = ()
    # A cuda leg's CUDA line ("12": [toolchains.cuda-12]; None: [toolchains.cuda]) and the
    # [cuda_profiles.<line>] profile its cuda_architectures came from, if any.
    cuda_line: str | None = None
    cuda_profile: str | None = None
    # The bundle's name template (pipeline.names); None: upstream's style.
    bundle_name: str | None = None
    # The newest GLIBC_x.y a Linux bundle may require (check-bundle); its runner's glibc by default.
    glibc_max: str = "2.35"
    # macOS: the oldest macOS its binaries may ask for (LC_BUILD_VERSION minos, check-bundle).
    macos_min: str = DEFAULT_MACOS_MIN
    # Why the leg is declared but not built (None: it is built): it stays listed, with the reason.
    disabled: str | None = None

    @property
    def needs_resolution(self) -> bool:
        """ROCm legs need the run's resolved toolchain; the others need nothing."""
        return self.backend == "rocm"


@dataclass(frozen=True, kw_only=True)
class Matrix:
    path: Path
    source: SourceConfig
    rocm: RocmConfig
    ccache: CcacheConfig
    report: ReportConfig
    github: GitHubConfig
    cmake_args: tuple[str, ...]
    # Every leg the file declares, in its order, a disabled one included (``legs``: the ones built).
    all_legs: Mapping[str, Leg] = field(default_factory=dict)
    # [toolchains]: pinned CUDA wheels and SDK archives.
    toolchains: ToolchainPins = field(default_factory=ToolchainPins)
    # [cuda_profiles.<line>]: named sets of CUDA architectures ("portable" -> ["75", "80", ...]).
    cuda_profiles: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    # [rocm_families.<name>]: a GPU family's TheRock name and its targets.
    rocm_families: Mapping[str, RocmFamily] = field(default_factory=dict)

    @cached_property
    def legs(self) -> Mapping[str, Leg]:
        """The legs a run builds: every declared one but those that say ``disabled = "<why>"``."""
        return {name: leg for name, leg in self.all_legs.items() if leg.disabled is None}

    @cached_property
    def disabled_legs(self) -> Mapping[str, Leg]:
        """The legs declared but not built, each with its reason (``Leg.disabled``)."""
        return {name: leg for name, leg in self.all_legs.items() if leg.disabled is not None}

    @property
    def declared_legs(self) -> list[Leg]:
        """Every leg the file declares, in its order, the disabled ones included."""
        return list(self.all_legs.values())

    def leg(self, name: str) -> Leg:
        """The leg called ``name``, or a ConfigError with a "did you mean" (or why it is disabled)."""
        if name in self.disabled_legs:
            raise ConfigError(f"leg {name!r} is disabled in {self.path}: {self.disabled_legs[name].disabled}")
        try:
            return self.legs[name]
        except KeyError:
            raise ConfigError(
                f"unknown leg {name!r} in {self.path}: expected one of {', '.join(self.legs)}"
                + _did_you_mean(name, self.legs)
            ) from None


# --------------------------------------------------------------------------
# Loading


def load_matrix(path: str | os.PathLike[str]) -> Matrix:
    """Read and validate a matrix file; raise ConfigError naming what is wrong.

    Which file is the run's is decided once, with the run's inputs (see
    :mod:`pipeline.inputs.settings`).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"{p}: matrix file not found", hint=f"pass {MATRIX.flag} PATH or set {MATRIX.env_var}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read matrix file: {exc.strerror}") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raise ConfigError(f"{p}: starts with a UTF-8 byte order mark (BOM), which TOML does not allow; save it without")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: TOML syntax error: {exc}") from None
    return parse_matrix(data, p)


def parse_matrix(data: Mapping[str, Any], path: Path) -> Matrix:
    """Validate already-parsed TOML data (the file name is used in messages)."""
    root = _Table(data, path, "")
    source = _parse_source(root.table("source"))
    rocm_t = root.table("rocm")
    rocm = RocmConfig(
        policy=rocm_t.string("policy", RocmConfig.policy, check=_policy_check),
        index_url=rocm_t.string("index_url", RocmConfig.index_url, check=_url_check),
        source=rocm_t.choice("source", ROCM_SOURCES, RocmConfig.source),
        wheel_index_url=rocm_t.string("wheel_index_url", RocmConfig.wheel_index_url, check=_wheel_index_check),
    )
    rocm_t.done()
    cc = root.table("ccache")
    ccache = CcacheConfig(
        max_size=cc.string("max_size", CcacheConfig.max_size, check=_size_check),
        compiler_check=cc.choice("compiler_check", COMPILER_CHECKS, CcacheConfig.compiler_check),
        evict_older_than_days=cc.number("evict_older_than_days", 7.0, minimum=0),
        save_min_new_entries=cc.integer("save_min_new_entries", 1, minimum=0),
        warm_size=cc.string("warm_size", CcacheConfig.warm_size, check=_size_check),
        remote=cc.optional_str("remote", check=_remote_check),
    )
    cc.done()
    rep = root.table("report")
    report = ReportConfig(hit_rate_warning=rep.number("hit_rate_warning", 0.9, minimum=0, maximum=1))
    rep.done()
    gh = root.table("github")
    github = GitHubConfig(
        keep=gh.integer("keep", 2, minimum=1),
        cache_limit_bytes=gh.integer("cache_limit_bytes", GitHubConfig.cache_limit_bytes, minimum=1),
        cache_warn_fraction=gh.number("cache_warn_fraction", 0.8, minimum=0, maximum=1),
        stale_days=gh.number("stale_days", 2.0, minimum=0.01, maximum=3650),
    )
    gh.done()
    cm = root.table("cmake")
    cmake_args = cm.str_list("args")
    cm.done()
    toolchains = parse_toolchain_pins(root.table("toolchains").data, path)
    profiles = _parse_cuda_profiles(root.table("cuda_profiles"))
    families = _parse_rocm_families(root.table("rocm_families"))
    legs_t = root.table("legs", required=True)
    legs = {name: _parse_leg(name, legs_t, profiles, families) for name in legs_t.names()}
    legs_t.done()
    if all(leg.disabled is not None for leg in legs.values()):
        raise ConfigError(f"{path}: legs: at least one leg must be declared (and not disabled)")
    root.done()
    return Matrix(
        path=path,
        source=source,
        rocm=rocm,
        ccache=ccache,
        report=report,
        github=github,
        cmake_args=tuple(cmake_args),
        all_legs=legs,
        toolchains=toolchains,
        cuda_profiles=profiles,
        rocm_families=families,
    )


def _parse_rocm_families(t: _Table) -> dict[str, RocmFamily]:
    """``[rocm_families.<name>]``: ``therock`` (the index's family name) and ``targets``."""
    out: dict[str, RocmFamily] = {}
    for name in t.names():
        ft = t.table(name)
        out[name] = RocmFamily(therock=ft.string("therock", None, check=_family_check),
                               targets=tuple(ft.str_list("targets", check=_target_check)))
        if not out[name].targets:
            raise ConfigError(f"{t.path}: rocm_families.{name}.targets: required (e.g. ['gfx1100', 'gfx1101'])")
        ft.done()
    t.done()
    return out


def _parse_cuda_profiles(t: _Table) -> dict[str, dict[str, tuple[str, ...]]]:
    """``[cuda_profiles.<line>]``: profile name -> CUDA architectures, per CUDA line."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for line in t.names():
        if not re.fullmatch(r"\d+", line):
            raise ConfigError(f"{t.path}: cuda_profiles.{line}: expected a CUDA major version such as '13'")
        lt = t.table(line)
        out[line] = {name: tuple(lt.str_list(name, check=_cuda_arch_check)) for name in lt.names()}
        lt.done()
    t.done()
    return out


def _parse_source(t: _Table) -> SourceConfig:
    repo = t.string("repo", DEFAULT_SOURCE_REPO, check=_nonempty)
    tag = t.string("tag", "latest", check=_tag_check)
    min_age = t.number("min_age_hours", 6.0, minimum=0)
    pins: list[MixPin] = []
    for i, item in enumerate(t.table_list("mix")):
        pin = MixPin(
            repo=item.string("repo", None, check=_repo_check),
            number=item.integer("number", None, minimum=1),
            sha=item.string("sha", None, check=_sha_check),
        )
        item.done()
        if any(p.repo == pin.repo and p.number == pin.number for p in pins):
            raise ConfigError(f"{t.path}: source.mix[{i}]: {pin.repo}#{pin.number} is listed twice")
        pins.append(pin)
    t.done()
    return SourceConfig(repo=repo, tag=tag, min_age_hours=min_age, mix=tuple(pins))


def _parse_leg(
    name: str, legs_t: _Table, profiles: Mapping[str, Mapping[str, tuple[str, ...]]],
    families: Mapping[str, RocmFamily] | None = None,
) -> Leg:
    where = f"{legs_t.path}: legs.{name}"
    if len(name) > LEG_NAME_MAX or not LEG_NAME.match(name):
        raise ConfigError(
            f"{where}: unsafe leg name {name!r}: expected letters, digits, '.', '_' and "
            f"single '-', starting with a letter or digit, at most {LEG_NAME_MAX} characters"
        )
    t = legs_t.table(name, required=True)
    backend = t.choice("backend", BACKENDS, None)
    os_name = t.choice("os", OSES, "linux")
    arch = t.choice("arch", ARCHES, DEFAULT_ARCH)
    runner = t.string("runner", default_runner(os_name, arch), check=_nonempty)
    leg = Leg(
        name=name,
        backend=backend,
        os=os_name,
        runner=runner,
        arch=arch,
        cmake_args=tuple(t.str_list("cmake_args")),
        family=t.optional_str("family", check=_family_check),
        targets=tuple(t.str_list("targets", check=_target_check)),
        cuda_architectures=tuple(t.str_list("cuda_architectures")),
        cuda_line=t.optional_str("cuda_line", check=_cuda_line_check),
        cuda_profile=t.optional_str("cuda_profile", check=_nonempty),
        bundle_name=t.optional_str("bundle_name", check=template_problem),
        glibc_max=t.string("glibc_max", runner_glibc(runner), check=glibc_problem),
        macos_min=t.string("macos_min", DEFAULT_MACOS_MIN, check=_macos_version_check),
        disabled=t.optional_str("disabled", check=_nonempty),
    )
    gpu_family = t.optional_str("gpu_family", check=_nonempty)
    t.done()
    if gpu_family is not None:
        found = (families or {}).get(gpu_family)
        if backend != "rocm":
            raise ConfigError(f"{where}.gpu_family: only a rocm leg takes gpu_family")
        if found is None:
            raise ConfigError(f"{where}.gpu_family: no [rocm_families.{gpu_family}] in the matrix"
                              + _did_you_mean(gpu_family, families or {}))
        if leg.family is not None or leg.targets:
            raise ConfigError(f"{where}: gpu_family names the family and targets: drop family/targets")
        leg = replace(leg, family=found.therock, targets=found.targets)
    if backend == "rocm":
        if leg.family is None:
            raise ConfigError(f"{where}.family: required for a rocm leg (TheRock family, e.g. 'gfx110X-all')")
        if not leg.targets:
            raise ConfigError(f"{where}.targets: required for a rocm leg (e.g. ['gfx1100', 'gfx1101'])")
    else:
        for key, value in (("family", leg.family), ("targets", leg.targets)):
            if value:
                raise ConfigError(f"{where}.{key}: only a rocm leg takes {key}, this leg's backend is {backend!r}")
    if backend == "rocm" and (os_name not in ROCM_OSES or arch != "x64"):
        raise ConfigError(f"{where}: a rocm leg builds for linux or windows on x64 (TheRock's tarballs), "
                          f"not {os_name}/{arch}")
    if backend == "metal" and (os_name, arch) != ("macos", "arm64"):
        raise ConfigError(f"{where}: a metal leg builds for macos on arm64 (Apple silicon), not {os_name}/{arch}")
    if os_name == "macos" and backend not in ("cpu", "metal"):
        raise ConfigError(f"{where}: a macos leg is a metal or cpu leg, not {backend}")
    for key in ("cuda_architectures", "cuda_line", "cuda_profile"):
        if getattr(leg, key) and backend != "cuda":
            raise ConfigError(f"{where}.{key}: only a cuda leg takes {key}")
    if leg.cuda_profile is not None:
        line = leg.cuda_line or DEFAULT_CUDA_LINE
        known = profiles.get(line, {})
        if leg.cuda_profile not in known:
            raise ConfigError(f"{where}.cuda_profile: no profile {leg.cuda_profile!r} in [cuda_profiles.{line}]"
                              + _did_you_mean(leg.cuda_profile, known))
        if leg.cuda_architectures:
            raise ConfigError(f"{where}: cuda_profile and cuda_architectures both name the architectures: keep one")
        leg = replace(leg, cuda_architectures=known[leg.cuda_profile])
    return leg


# --------------------------------------------------------------------------
# Value checks: each returns an error description, or None when fine.

Check = Callable[[str], "str | None"]


def _nonempty(v: str) -> str | None:
    return None if v.strip() else "a non-empty string"


def _policy_check(v: str) -> str | None:
    if v in POLICIES or ROCM_VERSION.fullmatch(v):
        return None
    return "'weekly-stable', 'weekly', 'latest' or an explicit version like '10.1.0a20260807'"


def _url_check(v: str) -> str | None:
    return url_problem(v)


def _wheel_index_check(v: str) -> str | None:
    # The "{family}" placeholder is filled per leg; the URL rule applies to what it becomes.
    return url_problem(v.replace("{family}", "gfx110X-all"))


def _remote_check(v: str) -> str | None:
    # ccache 4.14 fails every call on a scheme it cannot handle: accept only what it can.
    return None if re.match(r"^(redis|http)://", v) else "a redis:// or http:// URL"


def _size_check(v: str) -> str | None:
    return None if _SIZE.match(v) else "a size like '5G' or '500M'"


def _macos_version_check(v: str) -> str | None:
    return None if re.match(r"^\d+\.\d+$", v) else "a macOS version like '13.3'"


def _cuda_line_check(v: str) -> str | None:
    return None if re.fullmatch(r"\d+", v) else "a CUDA major version such as '12'"


def _cuda_arch_check(v: str) -> str | None:
    return None if re.fullmatch(r"\d+[af]?(?:-(?:real|virtual))?", v) else "a CUDA architecture like '86' or '50-virtual'"


def _tag_check(v: str) -> str | None:
    return None if UPSTREAM_TAG.match(v) else "'latest' or a tag like 'b10327'"


def _repo_check(v: str) -> str | None:
    return None if GITHUB_REPO.match(v) else "'owner/name'"


def _sha_check(v: str) -> str | None:
    return None if COMMIT_SHA.match(v) else "a full commit SHA (40 lowercase hex digits)"


def _family_check(v: str) -> str | None:
    return None if is_family(v) else "a TheRock family like 'gfx110X-all'"


def _target_check(v: str) -> str | None:
    return None if GPU_TARGET.match(v) else "a GPU target like 'gfx1100'"


def _did_you_mean(word: str, choices: object) -> str:
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1)  # type: ignore[attr-defined]
    return f" (did you mean {close[0]!r}?)" if close else ""


_T = TypeVar("_T")
_MISSING: Any = object()
# Every number of matrix.toml is hours, days or a fraction: past this it is a typo or an overflow waiting.
MAX_NUMBER = 1e6


class _Table:
    """A TOML table being consumed: each read pops a key; ``done`` rejects leftovers."""

    def __init__(self, data: Mapping[str, Any], path: Path, prefix: str) -> None:
        self.data = dict(data)
        self.path = path
        self.prefix = prefix
        self.known: list[str] = []

    def _key(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def _fail(self, key: str, expected: str, value: Any = _MISSING) -> ConfigError:
        got = "" if value is _MISSING else f", got {value!r}"
        return ConfigError(f"{self.path}: {self._key(key)}: expected {expected}{got}")

    def _take(self, key: str, default: Any) -> Any:
        self.known.append(key)
        if key in self.data:
            return self.data.pop(key)
        if default is None:
            raise ConfigError(f"{self.path}: {self._key(key)}: required key is missing")
        return default

    def names(self) -> list[str]:
        return list(self.data)

    def table(self, key: str, *, required: bool = False) -> _Table:
        self.known.append(key)
        value = self.data.pop(key, _MISSING)
        if value is _MISSING:
            if required:
                raise ConfigError(f"{self.path}: {self._key(key)}: required table is missing")
            value = {}
        if not isinstance(value, dict):
            raise self._fail(key, "a table", value)
        return _Table(value, self.path, self._key(key))

    def table_list(self, key: str) -> list[_Table]:
        value = self._take(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self._fail(key, "an array of tables", value)
        return [_Table(v, self.path, f"{self._key(key)}[{i}]") for i, v in enumerate(value)]

    def string(self, key: str, default: Any, *, check: Check | None = None) -> Any:
        value = self._take(key, default)
        if not isinstance(value, str):
            raise self._fail(key, "a string", value)
        if check and (problem := check(value)):
            raise self._fail(key, problem, value)
        return value

    def optional_str(self, key: str, *, check: Check | None = None) -> str | None:
        if key not in self.data:
            self.known.append(key)
            return None
        return self.string(key, None, check=check)  # type: ignore[no-any-return]

    def choice(self, key: str, choices: tuple[str, ...], default: Any) -> Any:
        value = self._take(key, default)
        if not isinstance(value, str) or value not in choices:
            expected = "one of " + ", ".join(repr(c) for c in choices)
            hint = _did_you_mean(value, choices) if isinstance(value, str) else ""
            raise ConfigError(f"{self.path}: {self._key(key)}: expected {expected}, got {value!r}{hint}")
        return value

    def integer(self, key: str, default: Any, *, minimum: int | None = None) -> Any:
        value = self._take(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._fail(key, "an integer", value)
        if minimum is not None and value < minimum:
            raise self._fail(key, f"an integer >= {minimum}", value)
        return value

    def number(self, key: str, default: Any, *, minimum: float | None = None, maximum: float | None = None) -> Any:
        value = self._take(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self._fail(key, "a number", value)
        # nan slips past every comparison (a nan threshold silently turns an alarm off); inf and
        # 1e308 overflow later as durations: refuse them here, naming the key.
        if not math.isfinite(value):
            raise self._fail(key, "a finite number", value)
        maximum = MAX_NUMBER if maximum is None else maximum
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            bounds = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
            raise self._fail(key, f"a number {bounds}", value)
        return float(value)

    def str_list(self, key: str, *, check: Check | None = None) -> list[str]:
        value = self._take(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._fail(key, "an array of strings", value)
        for item in value:
            if check and (problem := check(item)):
                raise self._fail(key, f"each item {problem}", item)
        return value

    def done(self) -> None:
        """Reject any key nobody asked for."""
        for key in self.data:
            raise ConfigError(
                f"{self.path}: {self._key(key)}: unknown key" + _did_you_mean(key, self.known)
            )
