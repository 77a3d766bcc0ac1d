"""The smoke test: each main program's ``--version`` from an unpacked bundle, on a scrubbed environment.

Scrubbed: no ``LD_LIBRARY_PATH`` (nor any variable of the build), a PATH of
the system folders only (so no toolchain), ``HOME`` in a folder of its own.
A program that starts there finds its libraries through the bundle alone.
GPU legs pass it without a GPU: ``--version`` loads the libraries but
touches no device.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pipeline.bundle.elfdeps import is_elf
from pipeline.bundle.pedeps import is_pe
from pipeline.guard.children import popen_child, stop_group

PROGRAM_PREFIX = "llama-"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
TIMEOUT_SECONDS = 120
_OUTPUT_CHARS = 400


@dataclass(frozen=True, kw_only=True)
class SmokeRun:
    """One program's ``--version`` run: its exit code and the start of what it printed."""

    program: str
    exit_code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> dict[str, object]:
        return {"program": self.program, "exit_code": self.exit_code, "output": self.output}


def main_programs(root: Path, os_name: str) -> list[str]:
    """The bundle's main programs: ``bin/llama-*`` executables (``.exe`` on Windows), sorted."""
    top = root / "bin"
    if not top.is_dir():
        return []
    found = []
    for item in sorted(top.iterdir()):
        if not item.name.startswith(PROGRAM_PREFIX) or item.is_symlink():
            continue
        if os_name == "windows":
            if item.suffix.lower() == ".exe" and is_pe(item):
                found.append(f"bin/{item.name}")
        elif ".so" not in item.name and is_elf(item):
            found.append(f"bin/{item.name}")
    return found


def scrubbed_env(home: Path) -> dict[str, str]:
    """The whole environment of a smoke run: nothing of the build machine's."""
    return {"PATH": SYSTEM_PATH, "HOME": str(home), "LC_ALL": "C", "TMPDIR": str(home)}


def run_version(root: Path, program: str, home: Path) -> SmokeRun:
    """Run ``<root>/<program> --version`` from ``home`` in the scrubbed environment."""
    home.mkdir(parents=True, exist_ok=True)
    # Files, not pipes: a program that exits but leaves a child holding its stdout would keep a
    # pipe open (and the smoke test waiting its whole timeout). What is left of its process
    # group once it exits is stopped.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            with popen_child([str(root / program), "--version"], cwd=home, env=scrubbed_env(home),
                             stdin=subprocess.DEVNULL, stdout=out, stderr=err) as proc:
                try:
                    returncode = proc.wait(timeout=TIMEOUT_SECONDS)
                except subprocess.TimeoutExpired:
                    stop_group(proc, grace=1.0)
                    return SmokeRun(program=program, exit_code=-1, output=f"no answer within {TIMEOUT_SECONDS}s")
                finally:
                    stop_group(proc, grace=0.0)
        except OSError as exc:
            return SmokeRun(program=program, exit_code=-1, output=f"cannot start: {exc.strerror}")
        out.seek(0)
        err.seek(0)
        text = (out.read().decode(errors="replace") + err.read().decode(errors="replace")).strip()
    return SmokeRun(program=program, exit_code=returncode, output=text[:_OUTPUT_CHARS])
