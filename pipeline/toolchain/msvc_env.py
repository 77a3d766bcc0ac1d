"""MSVC on Windows legs, the pure part: command lines, ``set`` parsing, env diff, identity.

The release job this pipeline replaces finds Visual Studio with vswhere and
loads ``vcvarsall.bat x64`` before CMake; without that environment (INCLUDE,
LIB, LIBPATH, PATH to link.exe) nothing links on a Windows runner. The
pipeline runs ``vcvarsall.bat x64`` once, prints a marker and then ``set``,
and keeps what changed. The MSVC toolset version (``VCToolsVersion``) goes
into the toolchain identity: its STL headers are in every object ccache keeps.

Pure: no subprocess here (:mod:`pipeline.toolchain.msvc` runs the commands).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PureWindowsPath

from pipeline.errors import ToolchainError

# Printed between vcvarsall's banner and ``set``: everything after it is the environment.
ENV_MARKER = "===PIPELINE-VCVARS-ENV==="
# The component every C++ build needs: the x64 compilers and linker.
VC_TOOLS_COMPONENT = "Microsoft.VisualStudio.Component.VC.Tools.x86.x64"
_TOOLS_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# Variables whose value is a ';'-separated list vcvarsall prepends to.
PATH_LISTS = ("PATH", "INCLUDE", "LIB", "LIBPATH", "EXTERNAL_INCLUDE")


@dataclass(frozen=True, kw_only=True)
class MsvcEnv:
    """What ``vcvarsall.bat`` set: the variables that changed and the versions they name."""

    # e.g. "14.44.35207" (VCToolsVersion)
    tools_version: str
    # e.g. "17.0" (VisualStudioVersion)
    vs_version: str
    # e.g. "10.0.26100.0" (WindowsSDKVersion), "" when not set
    sdk_version: str
    installation: str
    # Only what vcvarsall changed or added, with cmd's spelling of each name.
    changed: Mapping[str, str]

    @property
    def identity(self) -> str:
        return f"msvc-{self.tools_version}"

    def tools_dir(self, before: Mapping[str, str]) -> str | None:
        """``VCToolsInstallDir`` (the toolset's folder, ``...\\MSVC\\14.44.35207\\``): what vcvarsall set, else
        what the environment already held (a runner that loaded the same toolset before)."""
        return _get(self.changed, "VCToolsInstallDir") or _get(before, "VCToolsInstallDir")


def default_vswhere(env: Mapping[str, str]) -> PureWindowsPath:
    """Where the Visual Studio Installer puts vswhere.exe (fixed for VS 2017 and later)."""
    base = _get(env, "ProgramFiles(x86)") or r"C:\Program Files (x86)"
    return PureWindowsPath(base) / "Microsoft Visual Studio" / "Installer" / "vswhere.exe"


def vswhere_command(vswhere: PureWindowsPath | str) -> list[str]:
    """The newest Visual Studio (any edition, Build Tools included) with the x64 C++ tools."""
    return [str(vswhere), "-latest", "-products", "*", "-requires", VC_TOOLS_COMPONENT,
            "-property", "installationPath", "-utf8", "-nologo"]  # fmt: skip


def parse_vswhere(output: str) -> PureWindowsPath:
    """vswhere's answer -> the installation folder; a ToolchainError when it found none."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        raise ToolchainError(
            f"vswhere found no Visual Studio with {VC_TOOLS_COMPONENT} (install the C++ build tools)"
        )
    return PureWindowsPath(lines[0])


def vcvarsall_path(installation: PureWindowsPath | str) -> PureWindowsPath:
    return PureWindowsPath(installation) / "VC" / "Auxiliary" / "Build" / "vcvarsall.bat"


def vcvars_command_line(vcvarsall: PureWindowsPath | str, arch: str = "x64") -> str:
    """One cmd.exe line: run vcvarsall, then print the marker and the whole environment.

    ``/s`` makes cmd strip only the outer quotes, so the quoted path with
    spaces survives; ``/d`` skips AutoRun scripts that could print to stdout.
    """
    if not re.fullmatch(r"[A-Za-z0-9_]+", arch):
        raise ToolchainError(f"vcvarsall architecture {arch!r}: expected e.g. 'x64' or 'amd64_arm64'")
    return f'cmd.exe /d /s /c ""{vcvarsall}" {arch} && echo {ENV_MARKER} && set"'


def parse_set_output(text: str) -> dict[str, str]:
    """cmd's ``set`` listing -> {name: value}. Values may hold '='; cmd's hidden ``=C:`` entries are dropped."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        line = line.rstrip("\r")
        if not line or line.startswith("=") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        env[name] = value
    return env


def split_vcvars_output(text: str) -> tuple[str, dict[str, str]]:
    """(banner, environment) from the output of :func:`vcvars_command_line`."""
    banner, sep, rest = text.partition(ENV_MARKER)
    if not sep:
        raise ToolchainError(f"vcvarsall.bat failed: {_error_line(banner)}")
    return banner, parse_set_output(rest)


def _error_line(banner: str) -> str:
    for line in banner.splitlines():
        if "ERROR" in line.upper():
            return line.strip()
    lines = [line.strip() for line in banner.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _get(env: Mapping[str, str], name: str) -> str | None:
    """Windows names are case-insensitive (``Path`` is ``PATH``)."""
    lowered = name.lower()
    for key, value in env.items():
        if key.lower() == lowered:
            return value
    return None


def env_diff(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    """The variables ``after`` adds or changes, compared without regard to case of names."""
    old = {k.lower(): v for k, v in before.items()}
    return {k: v for k, v in after.items() if old.get(k.lower()) != v}


def msvc_env(
    before: Mapping[str, str], after: Mapping[str, str], installation: str, banner: str = ""
) -> MsvcEnv:
    """The captured environment -> :class:`MsvcEnv`; a ToolchainError naming what is missing."""
    tools = (_get(after, "VCToolsVersion") or "").strip().rstrip("\\")
    if not _TOOLS_VERSION.match(tools):
        why = _error_line(banner) if banner else "VCToolsVersion is not set"
        raise ToolchainError(f"vcvarsall.bat in {installation} set no MSVC toolset version: {why}")
    return MsvcEnv(
        tools_version=tools,
        vs_version=(_get(after, "VisualStudioVersion") or "").strip(),
        sdk_version=(_get(after, "WindowsSDKVersion") or "").strip().rstrip("\\"),
        installation=installation,
        changed=env_diff(before, after),
    )


def layer_path_lists(
    base: Mapping[str, str], msvc: Mapping[str, str], toolchain: Mapping[str, str]
) -> dict[str, str]:
    """The leg's environment additions with MSVC underneath the toolchain's own entries.

    A toolchain's PATH is ``<its folders>;<base PATH>``; MSVC's is
    ``<MSVC folders>;<base PATH>``. The result keeps the toolchain's folders
    first (TheRock's clang must win over MSVC's), then MSVC's, then the base.
    """
    merged: dict[str, str] = {}
    lower_msvc = {k.lower(): (k, v) for k, v in msvc.items()}
    for name, value in lower_msvc.values():
        merged[name] = value
    for key, value in toolchain.items():
        hit = lower_msvc.get(key.lower())
        old = _get(base, key)
        if hit is not None and key.upper() in PATH_LISTS and old and value.endswith(old):
            prefix = value[: len(value) - len(old)]
            merged.pop(hit[0])
            merged[key] = prefix + hit[1]
        else:
            if hit is not None:
                merged.pop(hit[0])
            merged[key] = value
    return merged
