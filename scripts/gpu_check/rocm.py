"""The ROCm half of the GPU check (scripts/gpu_check/check.py ``--backend rocm``): the machine's GPU target, its leg, its matrix.

Pure where it can be (text in, answer out), so that the tests hold it to
real tool output without an AMD GPU:

- :func:`targets_from_amdgpu_arch` and :func:`targets_from_rocminfo` read
  the GPU targets out of what ``amdgpu-arch`` (LLVM's clang-tools) and
  ``rocminfo`` print; :func:`machine_targets` runs them, ``amdgpu-arch``
  first (one line per GPU), ``rocminfo`` when it is not there;
- :func:`choose_leg`: the shipped Linux rocm leg whose ``targets`` (its own
  or its ``gpu_family``'s) include the machine's one target;
- :func:`rocm_matrix`: that leg of the shipped matrix.toml with the one
  reduction of scripts/workload/reduction.py, whose GPU targets are the machine's
  target instead of ``ROCM_TARGET`` (as the cuda check builds the H200's 90
  instead of ``CUDA_ARCHITECTURE``).

It reads matrix.toml with tomllib, not with the pipeline: it runs before
the pipeline's dependencies are unpacked, so that a machine without an AMD
GPU is told so at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.workload.reduction import reduced_matrix

# pipeline/names.py's GPU_TARGET: the form a leg's targets take (gfx1100, gfx90a).
GPU_TARGET = re.compile(r"^gfx[0-9a-f]+$")
# A target as the HIP runtime names it, with its features (gfx90a:sramecc+:xnack-): the target is the first part.
_TARGET_ID = re.compile(r"^(gfx[0-9a-f]+)(?::[a-z0-9-]+[+-])*$")
# rocminfo: an agent's own "Name:" (two spaces in); its ISAs' names (amdgcn-amd-amdhsa--gfx1100) are deeper.
_AGENT_NAME = re.compile(r"^  Name:\s+(\S+)\s*$", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Unfit(Exception):
    """The machine cannot run the ROCm check, or the asked target has no leg: one line, said as an error."""


def _target(word: str) -> str | None:
    match = _TARGET_ID.match(word.strip())
    return match.group(1) if match else None


def targets_from_amdgpu_arch(stdout: str) -> list[str]:
    """Each GPU's target, in order: ``amdgpu-arch`` prints one per line (its HIP query adds features: ``gfx90a:xnack-``)."""
    return [t for line in stdout.splitlines() if (t := _target(line))]


def targets_from_rocminfo(stdout: str) -> list[str]:
    """Each GPU agent's target, in order: the agents' ``Name: gfx...`` lines (a CPU agent's name is its model)."""
    return [t for name in _AGENT_NAME.findall(_ANSI.sub("", stdout)) if (t := _target(name))]


def tool_dirs(root: Path) -> list[Path]:
    """Where an install keeps ``amdgpu-arch`` and ``rocminfo``: ``bin``, TheRock's and /opt/rocm's LLVM, Debian's ``lib/llvm-N``."""
    # Debian may hold several clangs side by side (lib/llvm-14, lib/llvm-21): the newest first.
    versioned = sorted(
        (p for p in root.glob("lib/llvm-*/bin") if p.parent.name[5:].isdigit()),
        key=lambda p: int(p.parent.name[5:]),
        reverse=True,
    )
    return [root / "bin", root / "lib" / "llvm" / "bin", root / "llvm" / "bin", *versioned]


def find_tool(name: str, root: Path) -> Path | None:
    """``name`` in the install at ``root``, else on PATH."""
    for folder in tool_dirs(root):
        if (folder / name).is_file() and os.access(folder / name, os.X_OK):
            return folder / name
    found = shutil.which(name)
    return Path(found) if found else None


@dataclass(frozen=True, kw_only=True)
class Detected:
    """The machine's GPU targets and how they were read (the tool's path, and what it said when it found none)."""

    targets: list[str]
    tool: Path
    said: str


def machine_targets(root: Path) -> Detected:
    """The targets of the machine's AMD GPUs; :class:`Unfit` when it has no such tool, or the tools find no GPU."""
    tools = [(name, find_tool(name, root)) for name in ("amdgpu-arch", "rocminfo")]
    if not any(path for _, path in tools):
        raise Unfit(
            f"no amdgpu-arch or rocminfo in {root} ({', '.join(str(d) for d in tool_dirs(root))}) or on PATH: "
            "is ROCm installed (--rocm-path DIR)?"
        )
    heard = []
    for name, path in tools:
        if path is None:
            continue
        ran = subprocess.run([str(path)], capture_output=True, text=True, timeout=120, check=False)
        read = targets_from_amdgpu_arch if name == "amdgpu-arch" else targets_from_rocminfo
        targets = read(ran.stdout)
        if targets:
            return Detected(targets=targets, tool=path, said=ran.stdout)
        # rocminfo says why on stdout ("ROCk module is NOT loaded, ..."); its stderr is libkmod's noise.
        last = _ANSI.sub("", (ran.stdout.strip() or ran.stderr.strip() or "no output")).splitlines()[-1]
        heard.append(f"{path} (exit {ran.returncode}): {last}")
    raise Unfit("no AMD GPU on this machine: " + "; ".join(heard))


def linux_rocm_legs(shipped: dict[str, Any]) -> dict[str, list[str]]:
    """The shipped matrix's Linux rocm legs that are built, each with its targets (its own, or its ``gpu_family``'s)."""
    families = shipped.get("rocm_families", {})
    out = {}
    for name, leg in shipped["legs"].items():
        if leg.get("backend") != "rocm" or leg.get("os", "linux") != "linux" or leg.get("disabled"):
            continue
        targets = leg.get("targets") or families.get(leg.get("gpu_family", ""), {}).get("targets", [])
        out[name] = list(targets)
    return out


def choose_leg(targets: Sequence[str], legs: dict[str, list[str]]) -> tuple[str, str]:
    """(leg, target): the leg that builds the machine's one target; :class:`Unfit` naming the target(s) otherwise.

    Several GPUs of one target are one target. GPUs of different targets are
    refused: ggml offloads to every device it finds, and a bundle built for
    one target stops on the others ("ROCm error: invalid device function",
    ROCm/ROCm#5104); check-bundle's smoke run keeps no ``ROCR_VISIBLE_DEVICES``.
    """
    distinct = list(dict.fromkeys(targets))
    if not distinct:
        raise Unfit("no GPU target to build for")
    if len(distinct) > 1:
        raise Unfit(
            f"this machine's GPUs are of {len(distinct)} targets ({', '.join(distinct)}): a bundle is built "
            "for one, and ggml would offload to all of them; check a machine whose GPUs share one target"
        )
    (target,) = distinct
    if not GPU_TARGET.match(target):
        raise Unfit(f"{target!r} is not a GPU target (gfx1100, gfx90a, ...)")
    for name, leg_targets in legs.items():
        if target in leg_targets:
            return name, target
    shipped = ", ".join(sorted({t for ts in legs.values() for t in ts}))
    raise Unfit(f"no shipped Linux rocm leg of matrix.toml builds {target} (the legs' targets: {shipped})")


def _retarget(part: str, target: str, where: str) -> str:
    line = f"targets = {json.dumps([target])}\n"
    part, count = re.subn(r"(?m)^targets = \[.*?\]\n", lambda _m: line, part)
    if count != 1:
        raise AssertionError(f"[{where}]: expected one targets line, found {count}")
    return part


def rocm_matrix(shipped_text: str, *, leg: str, target: str, source_repo: str) -> str:
    """The shipped matrix as a run of ``leg`` only: the tests' reduction, and ``target`` as its one GPU target.

    The reduction gives a rocm leg ``ROCM_TARGET``; here the target is the
    machine's own, as the cuda check builds its GPU's architecture. The one
    ``targets`` line changed is the leg's, or its ``gpu_family``'s
    (``[rocm_families.<name>]``). The result is parsed again and compared
    with the reduced matrix: anything else changed is an AssertionError.
    """
    reduced = reduced_matrix(shipped_text, legs=[leg], source_repo=source_repo)
    data = tomllib.loads(reduced)
    family = data["legs"][leg].get("gpu_family")
    header = f"rocm_families.{family}" if family else f"legs.{leg}"
    parts = re.split(r"(?m)^(?=\[)", reduced)
    hits = [i for i, p in enumerate(parts) if p.startswith(f"[{header}]")]
    if len(hits) != 1:
        raise AssertionError(f"expected one [{header}] table, found {len(hits)}")
    parts[hits[0]] = _retarget(parts[hits[0]], target, header)
    text = "".join(parts)
    expected = data
    table = expected["rocm_families"][family] if family else expected["legs"][leg]
    table["targets"] = [target]
    if tomllib.loads(text) != expected:
        raise AssertionError("the rocm check's matrix differs from the reduced one by more than its target")
    return text
