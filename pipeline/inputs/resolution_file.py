"""The run's resolution as data: the ROCm build of every ROCm leg and the source, with its file format.

Written once by ``resolve`` (default ``out/resolved.json``) and read by every
leg of the run, so every leg uses the same toolchain and commit even when the
index or the repository gains something newer meanwhile. A leg reads a
resolution only when one is named (``--resolved`` / its environment variable,
see :mod:`pipeline.inputs.settings`): a file left by an earlier run is never used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pipeline.errors import SourceError, UsageError
from pipeline.inputs.matrix import ROCM_DISTRIBUTIONS, MixPin
from pipeline.inputs.mix import check_pins, mix_hash, mix_tag, pin_from_json, pin_to_json
from pipeline.inputs.settings import RESOLVED, parse_url
from pipeline.names import (
    COMMIT_SHA,
    SHA256_HEX,
    is_rocm_version,
    policy_problem,
    therock_identity,
    url_problem,
)
from pipeline.util.fsutil import atomic_write_json
from pipeline.util.timeutil import format_utc, parse_now

DEFAULT_RESOLVED_PATH = Path("out") / "resolved.json"
FORMAT = 1


def _check_url(value: Any, where: str, *, optional: bool) -> None:
    """The one URL rule (matrix.toml's and the flags'), for a URL field of the file; None passes when ``optional``."""
    if optional and value is None:
        return
    if (problem := url_problem(value)) is not None:
        raise UsageError(f"{where}: expected {problem}{' or null' if optional else ''}, got {value!r:.120}")


@dataclass(frozen=True, kw_only=True)
class SourceSpec:
    """What a run builds: a base tag of a repo, plus an ordered mix set."""

    # A git URL or a local path, as configured.
    repo: str
    # The upstream tag, e.g. "b10327".
    base_tag: str
    # The commit the base tag points at (peeled), when known.
    base_commit: str | None = None
    # When the base tag was made (tagger date, or committer date of a lightweight tag), when read.
    base_date: str | None = None
    mix: tuple[MixPin, ...] = field(default_factory=tuple)
    # The commit that is built: base_commit without a mix, the last merge with one.
    commit: str | None = None

    @property
    def tag(self) -> str:
        """The bundle's tag: the base tag, or ``<base>-mix-<hash7>``."""
        return mix_tag(self.base_tag, self.mix)

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "base_tag": self.base_tag,
            "base_commit": self.base_commit,
            "base_date": self.base_date,
            "tag": self.tag,
            "mix": [pin_to_json(p) for p in self.mix],
            "mix_hash": mix_hash(self.mix) if self.mix else None,
            "commit": self.commit,
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "source") -> SourceSpec:
        """Read :meth:`to_json` output back; SourceError naming ``where`` when malformed."""
        if not isinstance(data, Mapping):
            raise SourceError(f"{where}: expected an object, got {data!r}")
        repo, base_tag = data.get("repo"), data.get("base_tag")
        if not isinstance(repo, str) or not repo or not isinstance(base_tag, str) or not base_tag:
            raise SourceError(f"{where}: 'repo' and 'base_tag' must be non-empty strings")
        mix_raw = data.get("mix") or []
        if not isinstance(mix_raw, list):
            raise SourceError(f"{where}.mix: expected a list of pins")
        pins = tuple(pin_from_json(p, f"{where}.mix[{i}]") for i, p in enumerate(mix_raw))
        check_pins(pins, f"{where}.mix")
        optional: dict[str, str | None] = {}
        for key in ("base_commit", "base_date", "commit"):
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise SourceError(f"{where}.{key}: expected a string or null, got {value!r}")
            if key != "base_date" and value is not None and not COMMIT_SHA.match(value):
                raise SourceError(f"{where}.{key}: {value!r} is not a full commit SHA")
            optional[key] = value
        spec = cls(repo=repo, base_tag=base_tag, mix=pins, **optional)
        if "tag" in data and data["tag"] != spec.tag:
            raise SourceError(
                f"{where}.tag: {data['tag']!r} does not match its base tag and mix set (expected {spec.tag!r})"
            )
        return spec


def _date_text(value: date | None) -> str | None:
    return None if value is None else value.strftime("%Y%m%d")


def _parse_date(value: Any, where: str) -> date | None:
    if value is None:
        return None
    try:
        if not (isinstance(value, str) and len(value) == 8 and value.isdigit()):
            raise ValueError
        return date(int(value[:4]), int(value[4:6]), int(value[6:]))
    except ValueError:
        raise UsageError(f"{where}: expected a YYYYMMDD date or null, got {value!r}") from None


@dataclass(frozen=True, kw_only=True)
class ResolvedWheel:
    """One file of a ROCm build TheRock distributes as wheels: what the index listed, with the index's sha256."""

    # The project's normalized name (PEP 503), e.g. "rocm-sdk-core".
    project: str
    # The file name, e.g. "rocm_sdk_core-10.1.0a20260807-py3-none-manylinux_2_28_x86_64.whl".
    file: str
    url: str
    sha256: str
    # PEP 700 upload-time when the index states one.
    published: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "file": self.file,
            "url": self.url,
            "sha256": self.sha256,
            "published": None if self.published is None else format_utc(self.published),
        }

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> ResolvedWheel:
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected an object, got {type(data).__name__}")
        values: dict[str, str] = {}
        for key in ("project", "file", "url", "sha256"):
            value = data.get(key)
            if not isinstance(value, str) or not value:
                raise UsageError(f"{where}.{key}: expected a non-empty string, got {value!r}")
            values[key] = value
        _check_url(values["url"], f"{where}.url", optional=False)
        if not SHA256_HEX.fullmatch(values["sha256"]):
            raise UsageError(
                f"{where}.sha256: expected 64 lower-case hex digits, got {values['sha256']!r:.80}"
            )
        published = data.get("published")
        if published is not None and not isinstance(published, str):
            raise UsageError(f"{where}.published: expected an ISO-8601 string or null, got {published!r}")
        return cls(
            **values,
            published=None if published is None else parse_now(published, where=f"{where}.published"),
        )


def wheels_identity(version: str, sha256s: list[str] | tuple[str, ...]) -> str:
    """The identity of a build distributed as wheels: its version and a digest of its wheels' sha256s.

    The same version republished with other files is another toolchain (and
    another ccache key); the order of the files does not matter.
    """
    digest = hashlib.sha256("\n".join(sorted(sha256s)).encode()).hexdigest()
    return f"{therock_identity(version)}-wheels-{digest[:12]}"


@dataclass(frozen=True, kw_only=True)
class ResolvedRocm:
    """The ROCm build one leg of a run uses."""

    # "weekly", "latest" or the explicit version asked for.
    policy: str
    # The newest build date the policy accepted; None for latest/explicit.
    cutoff: date | None
    version: str
    # Tarball file name.
    file: str
    url: str
    # When the index says it was published; None when unknown (or the index was unreachable).
    published: datetime | None
    os: str
    family: str
    # The index's ``<file>.sha256sum`` beside the tarball; None when it lists none.
    sha256_url: str | None = None
    # "tarball" or "wheels" (matrix.toml's rocm.distribution); a wheel build names every file it installs.
    distribution: str = "tarball"
    wheels: tuple[ResolvedWheel, ...] = ()
    # The index the build was found in (a tarball build): the host that published it (matrix.toml's
    # [[rocm.hosts]] by build date) or --index-url. None in resolutions written before hosts were recorded.
    index_url: str | None = None

    @property
    def identity(self) -> str:
        """The toolchain's cache-key component, e.g. ``rocm-10.1.0a20260807`` (wheels: plus their digest)."""
        if self.distribution == "wheels":
            return wheels_identity(self.version, [w.sha256 for w in self.wheels])
        return therock_identity(self.version)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "policy": self.policy,
            "cutoff": _date_text(self.cutoff),
            "version": self.version,
            "file": self.file,
            "url": self.url,
            "published": None if self.published is None else format_utc(self.published),
            "os": self.os,
            "family": self.family,
        }
        # Only when known: the JSON of a build without a checksum stays what it always was.
        if self.sha256_url is not None:
            data["sha256_url"] = self.sha256_url
        if self.index_url is not None:
            data["index_url"] = self.index_url
        if self.distribution != "tarball":
            data["distribution"] = self.distribution
            data["wheels"] = [w.to_json() for w in self.wheels]
        return data

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> ResolvedRocm:
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected an object, got {type(data).__name__}")

        def text(key: str) -> str:
            value = data.get(key)
            if not isinstance(value, str) or not value:
                raise UsageError(f"{where}.{key}: expected a non-empty string, got {value!r}")
            return value

        def url() -> str:
            # The URL a leg downloads from: the same rule as matrix.toml's and the flags' URLs.
            value = text("url")
            _check_url(value, f"{where}.url", optional=False)
            return value

        published = data.get("published")
        if published is not None and not isinstance(published, str):
            raise UsageError(f"{where}.published: expected an ISO-8601 string or null, got {published!r}")
        # Absent from resolutions written before checksums were recorded.
        sha256_url = data.get("sha256_url")
        _check_url(sha256_url, f"{where}.sha256_url", optional=True)
        index_url = data.get("index_url")
        _check_url(index_url, f"{where}.index_url", optional=True)
        version = text("version")
        if not is_rocm_version(version):
            raise UsageError(f"{where}.version: not a TheRock version: {version!r}")
        # What the run asked for, read back by --rocm-version's check: the one rule of a policy.
        policy = text("policy")
        if (problem := policy_problem(policy)) is not None:
            raise UsageError(f"{where}.policy: expected {problem}, got {policy!r:.60}")
        # A resolution written before the key was renamed calls it "source" (now llama.cpp's alone).
        key = "distribution" if "distribution" in data or "source" not in data else "source"
        distribution = data.get(key, "tarball")
        if distribution not in ROCM_DISTRIBUTIONS:
            raise UsageError(f"{where}.{key}: expected 'tarball' or 'wheels', got {distribution!r:.60}")
        wheels_raw = data.get("wheels", [])
        if not isinstance(wheels_raw, list) or (distribution == "wheels") != bool(wheels_raw):
            raise UsageError(
                f"{where}.wheels: a wheels build lists its files (a non-empty list), a tarball none"
            )
        wheels = tuple(
            ResolvedWheel.from_json(w, where=f"{where}.wheels[{i}]") for i, w in enumerate(wheels_raw)
        )
        return cls(
            distribution=distribution,
            wheels=wheels,
            policy=policy,
            cutoff=_parse_date(data.get("cutoff"), f"{where}.cutoff"),
            version=version,
            file=text("file"),
            url=url(),
            published=None if published is None else parse_now(published, where=f"{where}.published"),
            os=text("os"),
            family=text("family"),
            sha256_url=sha256_url,
            index_url=index_url,
        )


@dataclass(frozen=True, kw_only=True)
class WarmUp:
    """A warm-up's resolution: the next window's builds, resolved ahead by ``warm-up`` at ``resolved_at``.

    The resolution's ``now`` is the moment that window begins. Its legs compile
    (no bundle) and save their ccache under a key of its own (``-warm``, see
    :mod:`pipeline.actions_cache.cache_keys`) for the window's first night.
    """

    # When the warm-up ran (its builds are those published by then).
    resolved_at: datetime
    # The run that warmed: its URL on GitHub Actions, else None.
    run_url: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"resolved_at": format_utc(self.resolved_at), "run_url": self.run_url}

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> WarmUp:
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected an object or null, got {data!r:.60}")
        at, url = data.get("resolved_at"), data.get("run_url")
        if not isinstance(at, str):
            raise UsageError(f"{where}.resolved_at: expected an ISO-8601 string, got {at!r}")
        _check_url(url, f"{where}.run_url", optional=True)
        return cls(resolved_at=parse_now(at, where=f"{where}.resolved_at"), run_url=url)


@dataclass(kw_only=True)
class Resolution:
    """One run's resolved inputs: written by ``resolve``, read by every leg."""

    now: datetime
    rocm_policy: str
    # The weekly cutoff of ``now`` (None for latest/explicit).
    cutoff: date | None
    legs: dict[str, ResolvedRocm] = field(default_factory=dict)
    # The run's llama.cpp source (tag, mix, commits), when the run resolved one.
    source: SourceSpec | None = None
    index_url: str | None = None
    # Set when this is a warm-up's resolution of the next window (``now`` is that window's start).
    warm_up: WarmUp | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **({"warm_up": self.warm_up.to_json()} if self.warm_up is not None else {}),
            "format": FORMAT,
            "now": format_utc(self.now),
            "rocm_policy": self.rocm_policy,
            "cutoff": _date_text(self.cutoff),
            "index_url": self.index_url,
            "legs": {name: leg.to_json() for name, leg in sorted(self.legs.items())},
            "source": None if self.source is None else self.source.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any, *, where: str = "resolution") -> Resolution:
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected a JSON object, got {type(data).__name__}")
        if data.get("format", FORMAT) != FORMAT:
            raise UsageError(f"{where}: format {data.get('format')!r} is not {FORMAT}; re-run resolve")
        now = data.get("now")
        if not isinstance(now, str):
            raise UsageError(f"{where}: 'now' must be an ISO-8601 string, got {now!r}")
        policy = data.get("rocm_policy")
        if not isinstance(policy, str):
            raise UsageError(f"{where}: 'rocm_policy' must be a string, got {policy!r}")
        legs = data.get("legs")
        if not isinstance(legs, dict):
            raise UsageError(f"{where}: 'legs' must be an object of leg name -> build, got {legs!r:.60}")
        source = data.get("source")
        if source is not None and not isinstance(source, dict):
            raise UsageError(f"{where}: 'source' must be an object or null, got {source!r:.60}")
        index_url = data.get("index_url")
        _check_url(index_url, f"{where}.index_url", optional=True)
        try:
            spec = None if source is None else SourceSpec.from_json(source, where=f"{where}: source")
        except SourceError as err:
            # A malformed resolution is a bad input file (exit 2) wherever in it the fault is.
            raise UsageError(err.message) from None
        return cls(
            now=parse_now(now, where=f"{where}.now"),
            rocm_policy=policy,
            cutoff=_parse_date(data.get("cutoff"), f"{where}.cutoff"),
            legs={str(k): ResolvedRocm.from_json(v, where=f"{where}.legs.{k}") for k, v in legs.items()},
            source=spec,
            index_url=parse_url(index_url, f"{where}.index_url") if isinstance(index_url, str) else None,
            warm_up=None
            if data.get("warm_up") is None
            else WarmUp.from_json(data["warm_up"], where=f"{where}.warm_up"),
        )


@dataclass(frozen=True, kw_only=True)
class LegResolution:
    """What one leg run takes from resolution, settled before its first step.

    The leg's steps read these and never reach the network for them: ``rocm``
    is the leg's TheRock build (None for a leg that builds with an installed
    ROCm, or another backend), ``source`` the tag and mix set to check out
    (None when the tree is given: ``--source`` or the run's source archive).
    Made by :func:`pipeline.run_resolution.resolve_leg`.
    """

    rocm: ResolvedRocm | None = None
    source: SourceSpec | None = None


# --------------------------------------------------------------------------
# The resolution file


def write_resolution(path: str | Path, resolution: Resolution) -> None:
    """Write the resolution atomically (readers see the old file or the new one)."""
    atomic_write_json(Path(path), resolution.to_json())


def load_resolution(value: str, *, where: str = RESOLVED.env_var) -> Resolution:
    """A resolution from a file path or inline JSON (as ``PIPELINE_RESOLVED`` carries it)."""
    text = value.strip()
    if text.startswith("{"):
        raw, origin = text, f"{where} (inline JSON)"
    else:
        path = Path(text)
        if not text or not path.is_file():
            raise UsageError(f"{where}: neither a resolution file nor inline JSON: {value!r:.120}")
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{where}: cannot read {path}: {exc}") from None
        origin = str(path)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{origin}: malformed JSON at line {exc.lineno}: {exc.msg}") from None
    return Resolution.from_json(data, where=origin)
