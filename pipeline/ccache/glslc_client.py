"""The glslc cache's compiled launcher (``glslc_client.c``): built once per cache, checked at every run.

The program is compiled with the leg's C compiler into the glslc cache's folder, under the digest of its
source and of the machine it runs on, so a cache restored on the next night's runner finds it already
built. Before a run uses it, it is asked for its protocol (``PIPELINE_GLSLC_CLIENT_PROBE``): a program
that does not run here, or answers another protocol, is built again; when that fails too (no working C
compiler), the leg keeps the Python launcher, which needs none.
"""

from __future__ import annotations

import hashlib
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pipeline.ccache.glslc_server import PROTOCOL
from pipeline.processes.groups import run_child

SOURCE_NAME = "glslc_client.c"
PROBE_VARIABLE = "PIPELINE_GLSLC_CLIENT_PROBE"
PROGRAM_NAME = "glslc-client"
CLIENT_SUBDIR = "client"
COMPILE_SECONDS = 120.0
PROBE_SECONDS = 30.0


@dataclass(frozen=True, kw_only=True)
class ClientProgram:
    """The compiled launcher in the cache (``program``), or why there is none (``problem``)."""

    program: Path | None
    problem: str | None = None


def client_source() -> bytes:
    return resources.files("pipeline.ccache").joinpath(SOURCE_NAME).read_bytes()


def client_key(source: bytes, machine: str) -> str:
    """Where a build of ``source`` for ``machine`` (``platform.system()-platform.machine()``) is kept."""
    return hashlib.sha256(source + b"\0" + machine.encode("utf-8")).hexdigest()


def _answers(program: Path) -> bool:
    try:
        proc = run_child(
            [str(program)], env={PROBE_VARIABLE: "1"}, capture_output=True, timeout=PROBE_SECONDS
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and proc.stdout.decode("utf-8", "replace").strip() == PROTOCOL


def _compile(cc: Path, source: bytes, program: Path) -> str | None:
    """Compile ``source`` to ``program`` (written whole or not at all); why not, when it fails."""
    program.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=program.parent, prefix=".build-") as tmp:
        src, out = Path(tmp) / SOURCE_NAME, Path(tmp) / PROGRAM_NAME
        src.write_bytes(source)
        try:
            proc = run_child(
                [str(cc), "-O2", "-o", str(out), str(src)], capture_output=True, timeout=COMPILE_SECONDS
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{cc} did not compile the glslc launcher: {exc}"
        if proc.returncode != 0 or not out.is_file():
            said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            return (
                f"{cc} did not compile the glslc launcher: {said[-1] if said else f'exit {proc.returncode}'}"
            )
        out.chmod(0o755)
        out.replace(program)
    return None


def client_program(cc: Path | None, cache_dir: Path) -> ClientProgram:
    """The launcher compiled for this machine, from ``cache_dir`` (the glslc cache's folder) or built there."""
    if cc is None or shutil.which(str(cc)) is None:
        return ClientProgram(program=None, problem=f"no C compiler to build the glslc launcher with ({cc})")
    source = client_source()
    key = client_key(source, f"{platform.system()}-{platform.machine()}")
    program = cache_dir / CLIENT_SUBDIR / key / PROGRAM_NAME
    if program.is_file() and _answers(program):
        return ClientProgram(program=program)
    try:
        problem = _compile(cc, source, program)
    except OSError as exc:
        # A read-only (or full) cache folder: the Python launcher reads the cache all the same.
        problem = f"the glslc launcher cannot be written into {program.parent.parent}: {exc.strerror or exc}"
    if problem is not None:
        return ClientProgram(program=None, problem=problem)
    if not _answers(program):
        return ClientProgram(program=None, problem=f"the glslc launcher {cc} compiled does not run here")
    return ClientProgram(program=program)
