"""The run's inputs, fixed once per process at the command line.

:class:`RunInputs` is built here, from the parsed arguments, the environment
and the clock, with the precedence of :mod:`pipeline.inputs.settings` (flag >
environment > matrix.toml > default). Everything below the CLI receives it
as an argument: this is the one module that reads ``os.environ`` and the
clock, so a leg run alone reads the clock once, and a test or a replay hands
in any moment and environment it likes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pipeline.errors import ConfigError, UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.matrix import Matrix, load_matrix
from pipeline.inputs.resolution_file import Resolution, load_resolution
from pipeline.names import LOCALAPPDATA, XDG_CACHE_HOME, in_actions, is_safe_tag
from pipeline.util.http_retry import RetryPolicy
from pipeline.util.timeutil import utc_now


@dataclass(frozen=True, kw_only=True)
class RunInputs:
    """Everything a run depends on besides matrix.toml's legs, fixed before any work starts."""

    # The run's moment (aware UTC): the clock, or a replayed --now.
    now: datetime
    # The real moment this process started (records say when a build ran, even when replaying).
    started: datetime
    # The matrix file, and the matrix when the command needs one.
    matrix_path: Path
    matrix: Matrix | None
    # ROCm policy and index, after flag > environment > matrix.toml (where each came from: ``origins``).
    rocm_policy: str
    # One TheRock index for every build (--index-url, its variable, matrix.toml's rocm.index_url); None: the
    # matrix's [[rocm.hosts]] by build date.
    index_url: str | None
    # The run's llama.cpp tag override (flag or environment); None: matrix.toml's / the resolution's.
    tag: str | None
    # The run's resolution, when one is named, and where it was named.
    resolution: Resolution | None
    resolution_where: str | None
    out: Path
    # The run's source archive (`source` made it once; legs extract it instead of cloning), if named.
    source_archive: Path | None = None
    # An installed ROCm the rocm legs build with (--rocm-path / PIPELINE_ROCM_PATH): no index is fetched.
    rocm_path: Path | None = None
    # An explicit ccache directory for every leg of this process (--ccache-dir / CCACHE_DIR).
    ccache_dir: Path | None
    cache_home: Path
    download_cache: Path
    toolchain_dir: Path
    # Where the run's moment, policy and index came from: a flag, a variable, a matrix key or "default".
    origins: Mapping[str, str]
    # A read-only copy of the environment: the base of every child process's, GitHub's file commands.
    environ: Mapping[str, str]
    # The flags of the settings read only when a command uses them (see the properties below).
    lazy_flags: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))

    # Settings read when a command asks for them, not when the run starts: a bad PIPELINE_HEARTBEAT
    # stops a build (one line naming it), never `legs --json`, which has no heartbeat.

    def _lazy(self, setting: S.Setting) -> Any:
        return S.pick(setting, flag=self.lazy_flags.get(setting.name), environ=self.environ).value

    @property
    def git_url_template(self) -> str:
        return str(self._lazy(S.GIT_URL_TEMPLATE))

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of every HTTP client, with the run's first wait (PIPELINE_HTTP_BACKOFF) and the
        most seconds one request may spend waiting between its retries (PIPELINE_HTTP_RETRY_BUDGET)."""
        return RetryPolicy(
            backoff=float(self._lazy(S.HTTP_BACKOFF)), budget=float(self._lazy(S.HTTP_RETRY_BUDGET))
        )

    @property
    def signing_pfx(self) -> Path | None:
        """The local signer's PKCS#12 file (``--signing-pfx``), if one is given."""
        value = self._lazy(S.SIGNING_PFX)
        return Path(value).absolute() if value else None

    @property
    def signing_ca(self) -> Path | None:
        """The roots (PEM) Authenticode signatures must chain to (``--signing-ca``); None: the system's."""
        value = self._lazy(S.SIGNING_CA)
        return Path(value).absolute() if value else None

    @property
    def signing_timestamp_url(self) -> str | None:
        value = self._lazy(S.SIGNING_TIMESTAMP_URL)
        return str(value) if value else None

    @property
    def wait_lock(self) -> float:
        """Seconds to wait for a lock another run holds (0: fail at once, naming the holder)."""
        return float(self._lazy(S.WAIT_LOCK))

    @property
    def heartbeat(self) -> float:
        """Seconds without a finished build step before a CI log gets a "still building" line (0: never)."""
        return float(self._lazy(S.HEARTBEAT))

    @property
    def rocm_max_age_days(self) -> float:
        """Days after which a resolved ROCm build is stale (PIPELINE_ROCM_MAX_AGE, rocm.max_age_days)."""
        rocm = self.matrix.rocm if self.matrix is not None else None
        return float(
            S.pick(
                S.ROCM_MAX_AGE,
                environ=self.environ,
                matrix=rocm.max_age_days if rocm else None,
                matrix_where=f"{self.matrix_path} rocm.max_age_days",
            ).value
        )

    @property
    def rocm_stale(self) -> str:
        """What a stale ROCm build does: "warn" or "fail" (PIPELINE_ROCM_STALE, rocm.stale)."""
        rocm = self.matrix.rocm if self.matrix is not None else None
        return str(
            S.pick(
                S.ROCM_STALE,
                environ=self.environ,
                matrix=rocm.stale if rocm else None,
                matrix_where=f"{self.matrix_path} rocm.stale",
            ).value
        )

    def require_matrix(self) -> Matrix:
        if self.matrix is None:
            raise ConfigError(f"{self.matrix_path}: matrix file not found", hint="pass --matrix PATH")
        return self.matrix

    @property
    def in_actions(self) -> bool:
        """Whether this runs on GitHub Actions (:func:`pipeline.names.in_actions` of the run's environment)."""
        return in_actions(self.environ)

    def given(self, setting: S.Setting) -> bool:
        """Whether ``setting`` was given for this run (by its flag or its environment variable)."""
        where = self.origins.get(setting.name, "default")
        return where == setting.flag or where in setting.env

    @property
    def rocm_policy_where(self) -> str:
        """Where the ROCm policy came from (its flag, a variable, a matrix key, a manifest or "default")."""
        return self.origins.get(S.ROCM_VERSION.name, "default")

    @property
    def rocm_policy_overridden(self) -> bool:
        """Whether the policy was given for this run (flag or environment), not taken from matrix.toml."""
        return self.given(S.ROCM_VERSION)


def _flag(args: argparse.Namespace | None, setting: S.Setting) -> str | None:
    value = getattr(args, setting.name, None) if args is not None else None
    return None if value is None else str(value)


def default_cache_home(environ: Mapping[str, str]) -> Path:
    """``~/.cache/llama-pipeline`` (``%LOCALAPPDATA%`` on Windows, ``$XDG_CACHE_HOME`` when set)."""
    if sys.platform == "win32" and (local := environ.get(LOCALAPPDATA)):
        return Path(local) / "llama-pipeline"
    base = environ.get(XDG_CACHE_HOME) or str(Path.home() / ".cache")
    return Path(base) / "llama-pipeline"


def check_bundle_tag(tag: str, where: str) -> str:
    """A ``--source`` build's own tag names its bundle file: it must be safe there."""
    if not is_safe_tag(tag):
        raise UsageError(
            f"{where} {tag!r}: expected letters, digits, '.', '_', '+' and '-' (it names the bundle)"
        )
    return tag


def read_inputs(
    args: argparse.Namespace | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    clock: Callable[[], datetime] = utc_now,
    need_matrix: bool = True,
    with_resolution: bool = True,
    any_tag: bool = False,
    matrix: Matrix | None = None,
) -> RunInputs:
    """The run's inputs from parsed arguments (any subset of the settings' flags), environment and clock.

    ``need_matrix``: load and validate matrix.toml (a missing file is an
    error); otherwise it is loaded only when it exists. ``any_tag``: the tag
    names a ``--source`` build's bundle, not a tag to check out.
    """
    env: Mapping[str, str] = MappingProxyType(dict(os.environ if environ is None else environ))
    started = clock()

    matrix_path = Path(S.pick(S.MATRIX, flag=_flag(args, S.MATRIX), environ=env).value)
    if matrix is not None:
        matrix_path = matrix.path
    elif need_matrix or matrix_path.exists():
        matrix = load_matrix(matrix_path)

    now_picked = S.pick(S.NOW, flag=_flag(args, S.NOW), environ=env)
    now = now_picked.value if now_picked.value is not None else started

    policy = S.pick(
        S.ROCM_VERSION,
        flag=_flag(args, S.ROCM_VERSION),
        environ=env,
        matrix=matrix.rocm.policy if matrix else None,
        matrix_where=f"{matrix_path} rocm.policy",
    )
    index_url = S.pick(
        S.INDEX_URL,
        flag=_flag(args, S.INDEX_URL),
        environ=env,
        matrix=matrix.rocm.index_url if matrix else None,
    )

    tag_flag = _flag(args, S.TAG)
    if any_tag and tag_flag is not None:
        tag: str | None = check_bundle_tag(tag_flag, S.TAG.flag or "--tag")
    else:
        tag = S.pick(S.TAG, flag=tag_flag, environ=env).value

    # Read only by the commands that take a resolution: a stale variable must not break `compare`.
    resolved = (
        S.pick(S.RESOLVED, flag=_flag(args, S.RESOLVED), environ=env)
        if with_resolution
        else S.Picked(None, "")
    )
    resolution = load_resolution(resolved.value, where=resolved.where) if resolved.value else None

    cache_home = Path(S.pick(S.CACHE_HOME, environ=env, default=default_cache_home(env)).value)
    ccache_dir = S.pick(S.CCACHE_DIR, flag=_flag(args, S.CCACHE_DIR), environ=env).value
    source_archive = S.pick(S.SOURCE_ARCHIVE, flag=_flag(args, S.SOURCE_ARCHIVE), environ=env).value
    rocm_path = S.pick(S.ROCM_PATH, flag=_flag(args, S.ROCM_PATH), environ=env)
    return RunInputs(
        now=now,
        started=started,
        matrix_path=matrix_path,
        matrix=matrix,
        rocm_policy=policy.value,
        index_url=index_url.value,
        tag=tag,
        resolution=resolution,
        resolution_where=resolved.where if resolution is not None else None,
        out=Path(S.pick(S.OUT, flag=_flag(args, S.OUT), environ=env).value),
        ccache_dir=Path(ccache_dir) if ccache_dir else None,
        source_archive=Path(source_archive) if source_archive else None,
        rocm_path=Path(rocm_path.value) if rocm_path.value else None,
        cache_home=cache_home,
        download_cache=Path(S.pick(S.DOWNLOAD_CACHE, environ=env, default=cache_home / "downloads").value),
        toolchain_dir=Path(S.pick(S.TOOLCHAIN_DIR, environ=env, default=cache_home / "toolchains").value),
        lazy_flags=MappingProxyType(
            {setting.name: _flag(args, setting) for setting in (S.WAIT_LOCK, S.SIGNING_PFX, S.SIGNING_CA)}
        ),
        origins=MappingProxyType(
            {
                S.NOW.name: now_picked.where if now_picked.value is not None else "clock",
                S.ROCM_VERSION.name: policy.where,
                S.INDEX_URL.name: index_url.where,
                S.ROCM_PATH.name: rocm_path.where,
            }
        ),
        environ=env,
    )
