"""MSVC on Windows legs, the part that runs tools: vswhere, then ``vcvarsall.bat x64`` once.

The parsing, the command lines and the environment merge are pure and live
in :mod:`pipeline.toolchain.msvc_env`; this module only runs the two commands and
folds the result into a leg's :class:`~pipeline.toolchain.Toolchain`.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.names import safe_identity
from pipeline.processes.groups import run_child
from pipeline.toolchain.msvc_env import (
    MsvcEnv,
    default_vswhere,
    layer_path_lists,
    msvc_env,
    parse_vswhere,
    split_vcvars_output,
    vcvars_command_line,
    vcvarsall_path,
    vswhere_command,
)
from pipeline.toolchain.toolchain import Toolchain


def _run(cmd: list[str] | str, env: Mapping[str, str], what: str) -> str:
    try:
        proc = run_child(cmd, capture_output=True, text=True, timeout=300, env=dict(env), check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{what}: cannot run: {exc}") from None
    if proc.returncode != 0 and what == "vswhere":
        raise ToolchainError(f"vswhere failed (exit {proc.returncode}): {proc.stderr.strip()[:200]}")
    return str(proc.stdout)


def capture_msvc(env: Mapping[str, str], *, arch: str = "x64") -> MsvcEnv:
    """Find Visual Studio with vswhere, run ``vcvarsall.bat <arch>`` once, keep what it changed."""
    vswhere = default_vswhere(env)
    if not Path(str(vswhere)).is_file():
        raise ToolchainError(
            f"{vswhere}: vswhere.exe not found (install Visual Studio 2022 or its Build Tools)"
        )
    installation = parse_vswhere(_run(vswhere_command(vswhere), env, "vswhere"))
    bat = vcvarsall_path(installation)
    if not Path(str(bat)).is_file():
        raise ToolchainError(f"{bat}: vcvarsall.bat not found in the Visual Studio that vswhere named")
    # Output is only trusted after the marker: `&&` stops before it when vcvarsall fails.
    banner, after = split_vcvars_output(_run(vcvars_command_line(bat, arch), env, "vcvarsall.bat"))
    return msvc_env(env, after, str(installation), banner)


def identity_with_msvc(identity: str, msvc: MsvcEnv) -> str:
    """A toolchain identity with the MSVC toolset a Windows leg links with: it is in every object, so in the key."""
    return safe_identity(f"{identity}-{msvc.identity}")


def with_msvc(toolchain: Toolchain, msvc: MsvcEnv, base_env: Mapping[str, str]) -> Toolchain:
    """``toolchain`` with MSVC's environment beneath its own, and the MSVC version in its identity."""
    return dataclasses.replace(
        toolchain,
        identity=identity_with_msvc(toolchain.identity, msvc),
        compilers={**toolchain.compilers, "MSVC": f"MSVC {msvc.tools_version} ({msvc.installation})"},
        details={
            **toolchain.details,
            "msvc": msvc.tools_version,
            "visual_studio": msvc.vs_version,
            "windows_sdk": msvc.sdk_version,
        },
        env=layer_path_lists(base_env, msvc.changed, toolchain.env),
    )
