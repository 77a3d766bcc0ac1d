"""Nox sessions: one per leg of matrix.toml, plus resolve, nightly, tests, e2e, lint, docs, report, prune, publish, bench.

Thin on purpose: every session installs the project into its virtualenv (so
ccache, CMake and Ninja come pinned from PyPI) and calls ``python -m pipeline``.
Arguments after ``--`` go to the pipeline.

Fast to start: uv creates the virtualenvs where it is installed (``uv|virtualenv``),
and the project is installed only when what the install depends on changed
(see :func:`_install`), so a leg session on an unchanged checkout costs about
what ``python -m pipeline build`` costs.

Nox passes the pipeline through: its stderr stays stderr (its ``error:`` line),
and a failed run ends with the pipeline's exit code, not nox's 1. A leg that
matrix.toml disables is still a session: listed with ``(disabled: <why>)``, run
it fails with that reason and exit 2. A mistyped session name gets the nearest
one before nox's own "Sessions not found".
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import nox
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from pipeline.commands.shared.build_args import out_of_build_args  # noqa: E402
from pipeline.errors import ConfigError  # noqa: E402
from pipeline.github.runner import log_text  # noqa: E402
from pipeline.inputs.leg import Leg  # noqa: E402
from pipeline.inputs.matrix import Matrix, load_matrix  # noqa: E402
from pipeline.inputs.run_inputs import default_cache_home  # noqa: E402
from pipeline.inputs.settings import MATRIX as MATRIX_SETTING  # noqa: E402
from pipeline.inputs.settings import RESOLVED  # noqa: E402
from pipeline.inputs.toml_table import did_you_mean  # noqa: E402
from pipeline.util.fsutil import atomic_write_text  # noqa: E402

nox.options.reuse_venv = "yes"
# uv creates a venv and installs in a fraction of pip's time; virtualenv where uv is missing.
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests", "lint"]
nox.needs_version = ">=2024.3.2"

try:
    MATRIX: Matrix = load_matrix(os.environ.get(MATRIX_SETTING.env_var) or ROOT / MATRIX_SETTING.default)
except ConfigError as err:
    print(f"error: {err}", file=sys.stderr)
    sys.exit(err.exit_code)

from pipeline.util.this_machine import host_arch, host_os  # noqa: E402

HOST_OS = host_os()
HOST_ARCH = host_arch()


def builds_here(leg: Leg) -> str | None:
    """Why ``leg`` cannot build on this machine, or None: its OS, and its arch unless it cross-builds, by the
    pipeline's one rule (:func:`pipeline.toolchain.cross.cross_problem`: the cpu legs of ``CROSS_TARGETS``,
    Windows cpu with llama.cpp's clang toolchain files)."""
    if leg.os != HOST_OS:
        return f"it builds on {leg.os}, this machine runs {HOST_OS}"
    from pipeline.toolchain.cross import cross_problem

    return cross_problem(leg, host_os=HOST_OS, host=HOST_ARCH)


# The run's resolution, when `resolve` ran in this nox invocation (a leg's dependency):
# a file left by an earlier run is never picked up by a standalone leg.
_RESOLVED_THIS_RUN: list[str] = []
# The exit codes of this invocation's failed pipeline runs, in order: nox ends with the first (see _exit).
_FAILED_CODES: list[int] = []
# nox's exit code for a session name it does not know ("Sessions not found").
SESSION_NOT_FOUND_EXIT = 3


def run_by_nox(argv: Sequence[str]) -> bool:
    """True when this file was loaded by nox (``nox``, ``python -m nox``), not imported by a test."""
    program = Path(argv[0]) if argv else Path()
    return program.stem == "nox" or program.parent.name == "nox"


def _exit(code: str | int | None = None) -> NoReturn:
    # nox ends every failed run with 1 (tasks.final_reduce); when a pipeline run failed, the caller gets
    # that run's code instead (2: bad input, 7: a toolchain too old, ... the pipeline's exit-code table).
    _nox_exit(_FAILED_CODES[0] if code == 1 and _FAILED_CODES else code)


_nox_exit = sys.exit
if run_by_nox(sys.argv):
    # Only when nox runs: nox._cli.main ends with sys.exit(final code), after every session ran.
    sys.exit = _exit


def fail(session: nox.Session, code: int, reason: str) -> NoReturn:
    """End ``session`` with ``reason`` (nox logs it to stderr); the nox run ends with ``code``. The reason can
    carry matrix.toml's text (a disabled leg's why): escaped on GitHub Actions, where a newline in it would
    start a workflow command."""
    _FAILED_CODES.append(code)
    session.error(log_text(reason, os.environ))


def run_pipeline(session: nox.Session, *args: str, env: dict[str, str] | None = None) -> None:
    """``python -m pipeline ARGS`` in the session: its stderr stays stderr (nox merges a command's into
    stdout by default) and a failure's exit code is kept for the end of the nox run."""
    try:
        session.run("python", "-m", "pipeline", *args, env=env or {}, stderr=None)
    except CommandFailed as exc:
        # CommandFailed.return_code exists in newer nox; an older one says only that it failed.
        _FAILED_CODES.append(getattr(exc, "return_code", None) or 1)
        raise


# The stamp inside a session's venv: what the project was last installed from.
INSTALL_STAMP = ".llama-pipeline-install"


def install_fingerprint(root: Path, extras: str) -> str:
    """What an editable install of ``root`` depends on: pyproject.toml and the extras.

    The install is editable, so the package's modules are read from the
    checkout at run time; only the metadata (dependencies, entry points,
    package data globs) is copied into the venv, and it all lives in pyproject.toml.
    """
    digest = hashlib.sha256()
    digest.update((root / "pyproject.toml").read_bytes())
    digest.update(f"\0{extras}\0{root}".encode())
    return digest.hexdigest()


def _install(session: nox.Session, extras: str = "") -> None:
    # `--no-venv` / `--force-venv-backend none` runs in the current environment,
    # which must then have the project installed already.
    if session.venv_backend == "none":
        session.log("no virtualenv: using the current environment as it is")
        return
    location = getattr(session.virtualenv, "location", None)
    stamp = Path(location) / INSTALL_STAMP if location else None
    fingerprint = install_fingerprint(ROOT, extras)
    if stamp is not None and stamp.is_file() and stamp.read_text(encoding="utf-8") == fingerprint:
        # A reinstall costs seconds (pip: ~7.7 s) and changes nothing.
        session.log(f"project unchanged since its install into {location}: not reinstalled")
        return
    session.install("-e", f".{extras}")
    if stamp is not None:
        atomic_write_text(stamp, fingerprint)


def _resolve_run(session: nox.Session) -> str:
    """Resolve the run once; the pipeline reads its own settings out of the leg's arguments.

    The resolution goes where the legs' ``--out`` is (``nox -s cpu -- --out DIR``), else ``PIPELINE_OUT``.
    """
    target = (out_of_build_args(session.posargs, os.environ) / "resolved.json").resolve()
    run_pipeline(session, "resolve", "--write", str(target), "--for-build", *session.posargs)
    return str(target)


@nox.session
def resolve(session: nox.Session) -> None:
    """Resolve the run's inputs (ROCm toolchain per leg, source tag) once; writes out/resolved.json."""
    _install(session)
    _RESOLVED_THIS_RUN[:] = [_resolve_run(session)]


def _register_leg(leg: Leg) -> None:
    def leg_session(session: nox.Session) -> None:
        _install(session)
        env = {RESOLVED.env_var: _RESOLVED_THIS_RUN[0]} if leg.needs_resolution and _RESOLVED_THIS_RUN else {}
        run_pipeline(session, "build", leg.name, *session.posargs, env=env)

    def disabled_session(session: nox.Session) -> None:
        try:
            MATRIX.leg(leg.name)
        except ConfigError as err:  # the pipeline's own words: "leg 'x' is disabled in <file>: <why>"
            fail(session, err.exit_code, str(err))

    what = f"Build the {leg.name} bundle ({leg.backend}, {leg.os}/{leg.arch})"
    if leg.disabled is not None:
        # Listed, so the reason is one `nox -l` away; nothing is installed or resolved for it.
        disabled_session.__doc__ = f"{what} (disabled: {log_text(leg.disabled, os.environ)})."
        nox.session(name=leg.name)(disabled_session)
        return
    leg_session.__doc__ = f"{what}."
    nox.session(name=leg.name, requires=["resolve"] if leg.needs_resolution else [])(leg_session)


for _leg in MATRIX.all_legs.values():
    _register_leg(_leg)


@nox.session
def nightly(session: nox.Session) -> None:
    """Every leg that can run on this OS, with one resolution; the others are skipped."""
    _install(session)
    runnable = [leg for leg in MATRIX.legs.values() if builds_here(leg) is None]
    for leg in MATRIX.legs.values():
        if (reason := builds_here(leg)) is not None:
            session.log(f"skipping {leg.name}: {reason}")
    env = {RESOLVED.env_var: _resolve_run(session)} if any(leg.needs_resolution for leg in runnable) else {}
    for leg in runnable:
        run_pipeline(session, "build", leg.name, *session.posargs, env=env)
    # The report reads the records where the legs wrote them (the legs' --out, if any).
    run_pipeline(session, "report", "--for-build", *session.posargs)


# pytest-xdist's workers for `nox -s tests` (the docstring below says why three).
TEST_WORKERS = ("-n", "3")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (unit and integration); arguments go to pytest (given any, they replace the defaults).

    Three test files at a time (pytest-xdist, a file's tests on one worker, so a module's fixture is made
    once): every build already uses all cores, and the other files fill one file's serial steps
    (configure, link, packaging, downloads, qemu) and its waits (servers, signals, heartbeats): on
    2 cores a second worker halved the suite without the real tree, and a third took up the warm run's
    idle time, which two left at a tenth of the cores' (docs/testing.md). Compiles share the cores
    through the session's jobserver (tests/support/shared_jobs.py). The longest files start first
    (tests/conftest.py, ``FIRST``).
    """
    _install(session, "[test]")
    # --no-loadscope-reorder: the files in tests/conftest.py's order (the longest first), not by test count.
    session.run(
        "pytest",
        *(session.posargs or [*TEST_WORKERS, "--dist", "loadfile", "--no-loadscope-reorder", "tests"]),
    )


@nox.session
def e2e(session: nox.Session) -> None:
    """What is beyond the suite's cold budget (marker ``long``): the reduced real-tree builds of cuda, cpu-arm64,
    vulkan and the CUDA 12 line, and act's warm-up week (tests/integration/, each well under an hour), and the full
    shipped legs, nothing reduced but the programs (tests/e2e/, hours on 2 cores); arguments go to pytest (``--leg
    cuda``: that leg's tests alone; ``--leg cuda tests/integration``: its reduced build alone)."""
    _install(session, "[test]")
    session.run("pytest", "-m", "long", *(session.posargs or ["tests"]))


def _build_docs(session: nox.Session, *args: str) -> None:
    # --strict: a broken link, a missing anchor or a page left out of the nav fails the build.
    # NO_MKDOCS_2_WARNING: the Material theme's banner about MkDocs 2 says nothing about this site.
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--site-dir",
        str(ROOT / "site"),
        *args,
        env={"NO_MKDOCS_2_WARNING": "1"},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, mypy --strict, the import contracts (the layers of ARCHITECTURE.md) and the docs site, strict."""
    _install(session, "[lint,docs]")
    session.run("ruff", "check", "pipeline", "tests", "scripts", "noxfile.py")
    # The code is as `ruff format` writes it: a change that is not fails here, naming the files.
    session.run("ruff", "format", "--check", "pipeline", "tests", "scripts", "noxfile.py")
    # mypy's cache in the cache home, not the checkout: a new clone (CI's every run) checks in 0.4 s what takes
    # 10 s cold. mypy re-checks any module whose source changed, whatever the folder it was checked in.
    cache = default_cache_home(os.environ) / "mypy"
    session.run("mypy", env={"MYPY_CACHE_DIR": os.environ.get("MYPY_CACHE_DIR", str(cache))})
    session.run("lint-imports")
    _build_docs(session)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the docs site (mkdocs.yml, docs/) into site/ with --strict; arguments go to mkdocs build."""
    _install(session, "[docs]")
    _build_docs(session, *session.posargs)


@nox.session
def report(session: nox.Session) -> None:
    """One table over every leg record in out/ (console, markdown, HTML)."""
    _install(session)
    run_pipeline(session, "report", *session.posargs)


@nox.session
def prune(session: nox.Session) -> None:
    """Plan (and with --apply, do) the pruning of old GitHub Actions caches."""
    _install(session)
    run_pipeline(session, "prune", *session.posargs)


@nox.session
def publish(session: nox.Session) -> None:
    """Plan (and with --apply, do) the GitHub release of the run's bundles."""
    _install(session)
    run_pipeline(session, "publish", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark: cold vs warm vs raw builds, the real llama.cpp tree, resolver and prune plan timings."""
    # [test]: the real-tree part times `nox -s cpu` too, with the nox that extra brings.
    _install(session, "[test]")
    # From the checkout (nox runs in the noxfile's folder): the benchmark is the package scripts.bench.
    session.run("python", "-m", "scripts.bench", *session.posargs)


def unknown_sessions(argv: Sequence[str], known: Sequence[str]) -> list[str]:
    """One ``error:`` line per session named with ``-s``/``-e``/``--session(s)`` in ``argv`` (before ``--``)
    that ``known`` lacks, with the nearest known name."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-s", "-e", "--session", "--sessions", dest="sessions", nargs="*", action="extend")
    own = list(argv[1 : argv.index("--")] if "--" in argv else argv[1:])
    asked = parser.parse_known_args(own)[0].sessions or []
    return [
        f"error: noxfile.py has no session {name!r}{did_you_mean(name, known)}; `nox -l` lists them"
        for name in asked
        if name not in known
    ]


if run_by_nox(sys.argv) and (_unknown := unknown_sessions(sys.argv, list(nox.registry.get()))):
    # Before nox's own lookup, which says only "Sessions not found".
    print("\n".join(_unknown), file=sys.stderr)
    _nox_exit(SESSION_NOT_FOUND_EXIT)
