"""matrix.toml -> frozen, typed objects.

The file is validated once, before any work starts. Every error names the
file, the dotted key and what was expected, with "did you mean" for near
misses. Only the standard library is used here so that ``noxfile.py`` can
import this module before any virtualenv exists.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError
from pipeline.inputs.leg import MAX_SHARDS, Leg
from pipeline.inputs.matrix_checks import (
    cmake_target_check,
    cuda_arch_check,
    cuda_line_check,
    family_check,
    macos_version_check,
    nonempty,
    policy_check,
    remote_check,
    repo_check,
    sha_check,
    size_check,
    tag_check,
    target_check,
    url_check,
    wheel_index_check,
)
from pipeline.inputs.pins import DEFAULT_CUDA_LINE, ToolchainPins, parse_toolchain_pins
from pipeline.inputs.rocm_hosts import ROCM_STREAMS, RocmHost, check_hosts
from pipeline.inputs.runners import DEFAULT_MACOS_MIN, default_runner, glibc_problem, runner_glibc
from pipeline.inputs.settings import MATRIX, STALE_ACTIONS
from pipeline.inputs.toml_table import TomlTable, did_you_mean
from pipeline.names import (
    ARCHES,
    BACKEND_NAMES,
    DEFAULT_ARCH,
    DEFAULT_POLICY,
    LEG_NAME,
    LEG_NAME_MAX,
    OSES,
    ROCM_OSES,
    template_problem,
)

# "toolchain": a string: check for toolchains installed from a verified archive (pipeline.ccache.compiler_check).
COMPILER_CHECKS = ("content", "mtime", "toolchain")

DEFAULT_SOURCE_REPO = "https://github.com/ggml-org/llama.cpp"


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


# How TheRock distributes a ROCm leg's toolchain: a tarball of the family, or Python wheels.
ROCM_DISTRIBUTIONS = ("tarball", "wheels")
# TheRock's wheel index since 2026-08-23 (RFC0012): one PEP 503 simple index per stream for every GPU
# ({stream}: "nightly", or "stable" for the stable policy). A URL with {family} is one index per GPU family
# (the older layout, rocm.nightlies.amd.com/v2/{family}/).
DEFAULT_WHEEL_INDEX = "https://{stream}.repo.amd.com/rocm/whl-next/"


@dataclass(frozen=True, kw_only=True)
class RocmConfig:
    policy: str = DEFAULT_POLICY
    # One index for every build, over the hosts (as --index-url); None: the hosts below.
    index_url: str | None = None
    # Where TheRock published each stream, by build date ([[rocm.hosts]]; pipeline/inputs/rocm_hosts.py).
    hosts: tuple[RocmHost, ...] = ()
    # A build older than this many days is stale; what that does ("warn" or "fail"). None: not set here
    # (the settings' defaults, pipeline.inputs.settings ROCM_MAX_AGE and ROCM_STALE).
    max_age_days: float | None = None
    stale: str | None = None
    # One of ROCM_DISTRIBUTIONS: TheRock's tarball or its wheels.
    distribution: str = "tarball"
    # A PEP 503 / 691 simple index; "{family}" in it becomes the leg's TheRock family, "{stream}" the policy's
    # TheRock stream (names.rocm_stream).
    wheel_index_url: str = DEFAULT_WHEEL_INDEX
    # The Saturday warm-up (`warm-up`, warm-up.yml): compile next week's build before its first night.
    warm_up: bool = True

    def wheel_index_for(self, family: str, stream: str = "nightly") -> str:
        """The wheel index a leg of ``family`` resolves against, for a policy of ``stream``."""
        return self.wheel_index_url.replace("{family}", family).replace("{stream}", stream)


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
class SigningConfig:
    """``[signing]``: which legs' Windows programs and libraries are Authenticode-signed, and by whom.

    A run signs a leg it covers only in ``repository`` (on Actions, with the
    release-signing environment's signer) or with a local signer (a PFX, given
    by a setting); elsewhere, a fork for one, it builds unsigned. docs/signing.md.
    """

    # fnmatch patterns of leg names (``rocm-windows-*``); none: nothing is signed.
    legs: tuple[str, ...] = ()
    # The common name (CN) of the signing certificate's subject: verify and check-bundle refuse another.
    publisher: str | None = None
    # OWNER/NAME of the repository whose Actions runs sign.
    repository: str | None = None

    def covers(self, leg: Leg) -> bool:
        """Whether ``leg``'s bundle is one this release signs."""
        return any(fnmatchcase(leg.name, pattern) for pattern in self.legs)


@dataclass(frozen=True, kw_only=True)
class RocmFamily:
    """One GPU family of [rocm_families]: the name TheRock's index gives its tarballs, and its targets."""

    therock: str
    targets: tuple[str, ...]


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
    # [signing]: the Windows legs whose binaries are Authenticode-signed, and the publisher.
    signing: SigningConfig = field(default_factory=SigningConfig)

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
            # The guess first: the list of every leg runs to hundreds of characters.
            raise ConfigError(
                f"unknown leg {name!r} in {self.path}{did_you_mean(name, self.legs)}: "
                f"expected one of {', '.join(self.legs)}"
            ) from None

    def check_bundle_names(self, name_of: Callable[[Leg], str]) -> None:
        """ConfigError naming the first two built legs whose bundles ``name_of`` names alike, and the name.

        Every leg of a run writes its bundle to ``<out>/dist/<name>`` and the
        release has one asset per name: a second leg with the first's name
        would silently replace its bundle. The backends' naming rule is theirs
        (``pipeline.backends``), so it is passed in. Names differing only in
        case are one file on Windows and macOS, so they clash too.
        """
        seen: dict[str, str] = {}
        for leg in self.legs.values():
            name = name_of(leg)
            if (first := seen.setdefault(name.casefold(), leg.name)) != leg.name:
                raise ConfigError(
                    f"{self.path}: legs {first!r} and {leg.name!r} both name their bundle {name!r}: give one "
                    "a bundle_name of its own (its template may use {leg})"
                )


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
        raise ConfigError(
            f"{p}: starts with a UTF-8 byte order mark (BOM), which TOML does not allow; save it without"
        )
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: TOML syntax error: {exc}") from None
    return parse_matrix(data, p)


def parse_matrix(data: Mapping[str, Any], path: Path) -> Matrix:
    """Validate already-parsed TOML data (the file name is used in messages)."""
    root = TomlTable(data, path, "")
    source = _parse_source(root.table("source"))
    rocm_t = root.table("rocm")
    # "source" in matrix.toml is llama.cpp's alone ([source]); a file written before says so, once.
    rocm_t.renamed("source", "distribution")
    rocm = RocmConfig(
        policy=rocm_t.string("policy", RocmConfig.policy, check=policy_check),
        index_url=rocm_t.optional_str("index_url", check=url_check),
        hosts=_parse_rocm_hosts(rocm_t),
        max_age_days=rocm_t.number("max_age_days", 0, minimum=1, maximum=3650)
        if "max_age_days" in rocm_t.names()
        else None,
        stale=rocm_t.choice("stale", STALE_ACTIONS, None) if "stale" in rocm_t.names() else None,
        distribution=rocm_t.choice("distribution", ROCM_DISTRIBUTIONS, RocmConfig.distribution),
        wheel_index_url=rocm_t.string("wheel_index_url", RocmConfig.wheel_index_url, check=wheel_index_check),
        warm_up=rocm_t.boolean("warm_up", RocmConfig.warm_up),
    )
    rocm_t.done()
    cc = root.table("ccache")
    ccache = CcacheConfig(
        max_size=cc.string("max_size", CcacheConfig.max_size, check=size_check),
        compiler_check=cc.choice("compiler_check", COMPILER_CHECKS, CcacheConfig.compiler_check),
        evict_older_than_days=cc.number("evict_older_than_days", 7.0, minimum=0),
        save_min_new_entries=cc.integer("save_min_new_entries", 1, minimum=0),
        warm_size=cc.string("warm_size", CcacheConfig.warm_size, check=size_check),
        remote=cc.optional_str("remote", check=remote_check),
    )
    cc.done()
    rep = root.table("report")
    report = ReportConfig(hit_rate_warning=rep.number("hit_rate_warning", 0.9, minimum=0, maximum=1))
    rep.done()
    gh = root.table("github")
    github = GitHubConfig(
        keep=gh.integer("keep", 2, minimum=1),
        cache_limit_bytes=gh.integer("cache_limit_bytes", GitHubConfig.cache_limit_bytes, minimum=1),
        cache_warn_fraction=gh.number("cache_warn_fraction", 0.8, above=0, maximum=1),
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
    for leg in legs.values():
        _check_base(leg, legs, f"{path}: legs.{leg.name}")
    if all(leg.disabled is not None for leg in legs.values()):
        raise ConfigError(f"{path}: legs: at least one leg must be declared (and not disabled)")
    signing = _parse_signing(root.table("signing"), legs)
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
        signing=signing,
    )


def _parse_signing(t: TomlTable, legs: Mapping[str, Leg]) -> SigningConfig:
    """[signing]: each pattern names only Windows legs (Authenticode signs PE files); a publisher is named
    whenever a leg is signed."""
    config = SigningConfig(
        legs=tuple(t.str_list("legs", check=nonempty)),
        publisher=t.optional_str("publisher", check=nonempty),
        repository=t.optional_str("repository", check=repo_check),
    )
    t.done()
    where = f"{t.path}: signing"
    for pattern in config.legs:
        # A pattern that matches no leg signs nothing: a fork's matrix (or CI's reduction) of fewer legs keeps it.
        matched = [leg for name, leg in legs.items() if fnmatchcase(name, pattern)]
        if other := next((leg for leg in matched if leg.os != "windows"), None):
            raise ConfigError(
                f"{where}.legs: {pattern!r} matches {other.name}, a {other.os} leg: Authenticode "
                "signs Windows programs and libraries only"
            )
    if config.legs and config.publisher is None:
        raise ConfigError(
            f"{where}.publisher: required key is missing (the certificate's subject CN the "
            "signatures must name)"
        )
    return config


def _parse_rocm_families(t: TomlTable) -> dict[str, RocmFamily]:
    """``[rocm_families.<name>]``: ``therock`` (the index's family name) and ``targets``."""
    out: dict[str, RocmFamily] = {}
    for name in t.names():
        ft = t.table(name)
        out[name] = RocmFamily(
            therock=ft.string("therock", None, check=family_check),
            targets=tuple(ft.str_list("targets", check=target_check)),
        )
        if not out[name].targets:
            raise ConfigError(
                f"{t.path}: rocm_families.{name}.targets: required (e.g. ['gfx1100', 'gfx1101'])"
            )
        ft.done()
    t.done()
    return out


def _parse_cuda_profiles(t: TomlTable) -> dict[str, dict[str, tuple[str, ...]]]:
    """``[cuda_profiles.<line>]``: profile name -> CUDA architectures, per CUDA line."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for line in t.names():
        if not re.fullmatch(r"\d+", line):
            raise ConfigError(f"{t.path}: cuda_profiles.{line}: expected a CUDA major version such as '13'")
        lt = t.table(line)
        out[line] = {name: tuple(lt.str_list(name, check=cuda_arch_check)) for name in lt.names()}
        lt.done()
    t.done()
    return out


def _date_check(text: str) -> str | None:
    try:
        date.fromisoformat(text)
    except ValueError:
        return "a date, YYYY-MM-DD"
    return None if len(text) == 10 else "a date, YYYY-MM-DD"


def _parse_rocm_hosts(rocm_t: TomlTable) -> tuple[RocmHost, ...]:
    """``[[rocm.hosts]]``: each stream's indexes with the build dates they hold (ranges that meet)."""
    hosts = []
    for item in rocm_t.table_list("hosts"):
        since, until = (
            item.optional_str("since", check=_date_check),
            item.optional_str("until", check=_date_check),
        )
        hosts.append(
            RocmHost(
                stream=item.choice("stream", ROCM_STREAMS, None),
                index_url=item.string("index_url", None, check=url_check),
                since=date.fromisoformat(since) if since else None,
                until=date.fromisoformat(until) if until else None,
            )
        )
        item.done()
    check_hosts(hosts, f"{rocm_t.path}: rocm.hosts")
    return tuple(hosts)


def _parse_source(t: TomlTable) -> SourceConfig:
    repo = t.string("repo", DEFAULT_SOURCE_REPO, check=nonempty)
    tag = t.string("tag", "latest", check=tag_check)
    min_age = t.number("min_age_hours", 6.0, minimum=0)
    pins: list[MixPin] = []
    for i, item in enumerate(t.table_list("mix")):
        pin = MixPin(
            repo=item.string("repo", None, check=repo_check),
            number=item.integer("number", None, minimum=1),
            sha=item.string("sha", None, check=sha_check),
        )
        item.done()
        if any(p.repo == pin.repo and p.number == pin.number for p in pins):
            raise ConfigError(f"{t.path}: source.mix[{i}]: {pin.repo}#{pin.number} is listed twice")
        pins.append(pin)
    t.done()
    return SourceConfig(repo=repo, tag=tag, min_age_hours=min_age, mix=tuple(pins))


def _parse_leg(
    name: str,
    legs_t: TomlTable,
    profiles: Mapping[str, Mapping[str, tuple[str, ...]]],
    families: Mapping[str, RocmFamily] | None = None,
) -> Leg:
    where = f"{legs_t.path}: legs.{name}"
    if len(name) > LEG_NAME_MAX or not LEG_NAME.match(name):
        raise ConfigError(
            f"{where}: unsafe leg name {name!r}: expected letters, digits, '.', '_' and "
            f"single '-', starting with a letter or digit, at most {LEG_NAME_MAX} characters"
        )
    t = legs_t.table(name, required=True)
    backend = t.choice("backend", BACKEND_NAMES, None)
    os_name = t.choice("os", OSES, "linux")
    arch = t.choice("arch", ARCHES, DEFAULT_ARCH)
    runner = t.string("runner", default_runner(os_name, arch), check=nonempty)
    leg = Leg(
        name=name,
        backend=backend,
        os=os_name,
        runner=runner,
        arch=arch,
        cmake_args=tuple(t.str_list("cmake_args")),
        family=t.optional_str("family", check=family_check),
        targets=tuple(t.str_list("targets", check=target_check)),
        cuda_architectures=tuple(t.str_list("cuda_architectures")),
        cuda_line=t.optional_str("cuda_line", check=cuda_line_check),
        cuda_profile=t.optional_str("cuda_profile", check=nonempty),
        bundle_template=t.optional_str("bundle_name", check=template_problem),
        glibc_max=t.string("glibc_max", runner_glibc(runner), check=glibc_problem),
        macos_min=t.string("macos_min", DEFAULT_MACOS_MIN, check=macos_version_check),
        disabled=t.optional_str("disabled", check=nonempty),
        base=t.optional_str("base", check=nonempty),
        build_targets=tuple(t.str_list("build_targets", check=cmake_target_check)),
        shards=t.integer("shards", 1, minimum=1),
    )
    if leg.shards > MAX_SHARDS:
        raise ConfigError(
            f"{where}.shards: at most {MAX_SHARDS} (nightly.yml's build job restores that many shard caches), "
            f"got {leg.shards}"
        )
    gpu_family = t.optional_str("gpu_family", check=nonempty)
    t.done()
    if gpu_family is not None:
        found = (families or {}).get(gpu_family)
        if backend != "rocm":
            raise ConfigError(f"{where}.gpu_family: only a rocm leg takes gpu_family")
        if found is None:
            raise ConfigError(
                f"{where}.gpu_family: no [rocm_families.{gpu_family}] in the matrix"
                + did_you_mean(gpu_family, families or {})
            )
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
                raise ConfigError(
                    f"{where}.{key}: only a rocm leg takes {key}, this leg's backend is {backend!r}"
                )
    if backend == "rocm" and (os_name not in ROCM_OSES or arch != "x64"):
        raise ConfigError(
            f"{where}: a rocm leg builds for linux or windows on x64 (TheRock's tarballs), "
            f"not {os_name}/{arch}"
        )
    if backend == "metal" and (os_name, arch) != ("macos", "arm64"):
        raise ConfigError(
            f"{where}: a metal leg builds for macos on arm64 (Apple silicon), not {os_name}/{arch}"
        )
    if os_name == "macos" and backend not in ("cpu", "metal"):
        raise ConfigError(f"{where}: a macos leg is a metal or cpu leg, not {backend}")
    for key in ("cuda_architectures", "cuda_line", "cuda_profile"):
        if getattr(leg, key) and backend != "cuda":
            raise ConfigError(f"{where}.{key}: only a cuda leg takes {key}")
    if leg.cuda_profile is not None:
        # Profiles are per major line: "13.4" takes [cuda_profiles.13]'s (13.x dropped the same architectures).
        line = leg.cuda_major or DEFAULT_CUDA_LINE
        known = profiles.get(line, {})
        if leg.cuda_profile not in known:
            raise ConfigError(
                f"{where}.cuda_profile: no profile {leg.cuda_profile!r} in [cuda_profiles.{line}]"
                + did_you_mean(leg.cuda_profile, known)
            )
        if leg.cuda_architectures:
            raise ConfigError(
                f"{where}: cuda_profile and cuda_architectures both name the architectures: keep one"
            )
        leg = replace(leg, cuda_architectures=known[leg.cuda_profile])
    return leg


def _check_base(leg: Leg, legs: Mapping[str, Leg], where: str) -> None:
    """A leg's ``base``: another declared cpu leg of its os and arch, itself without a base; and
    ``build_targets`` to say what this leg's own build adds on top (else both builds make every file)."""
    if leg.base is None:
        return
    base = legs.get(leg.base)
    if base is None or base.name == leg.name:
        raise ConfigError(
            f"{where}.base: no other leg {leg.base!r} in the matrix" + did_you_mean(leg.base, legs)
        )
    if base.backend != "cpu" or (base.os, base.arch) != (leg.os, leg.arch) or base.base is not None:
        raise ConfigError(
            f"{where}.base: {leg.base!r} must be a cpu leg for {leg.os}/{leg.arch} without a base of its own "
            f"(it is a {base.backend} leg for {base.os}/{base.arch})"
        )
    if not leg.build_targets:
        raise ConfigError(
            f"{where}.build_targets: required with base (the targets this leg adds to {leg.base!r}'s build, "
            "e.g. ['ggml-cuda'])"
        )


# --------------------------------------------------------------------------
# Value checks: each returns an error description, or None when fine.
