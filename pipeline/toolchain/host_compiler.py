"""The host C/C++ compiler: the CPU leg's whole toolchain, and part of the others'."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.names import CC, CXX, safe_identity
from pipeline.toolchain.toolchain import Toolchain, version_output

_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


def find_compiler(env_var: str, candidates: tuple[str, ...], environ: Mapping[str, str]) -> Path:
    """The compiler named by ``env_var`` (CC/CXX), else the first candidate on PATH."""
    named = environ.get(env_var)
    for name in ([named] if named else []) + list(candidates):
        found = shutil.which(name)
        if found:
            return Path(found)
    raise ToolchainError(f"no C/C++ compiler found: set {env_var} or install one of {', '.join(candidates)}")


def compiler_version(compiler: Path) -> tuple[str, str]:
    """(family, version) from ``compiler --version``, e.g. ("gcc", "12.2.0")."""
    out = version_output(compiler)
    first = out.splitlines()[0] if out else ""
    # `cc` and `c++` are usually links: tell the family from what the compiler says.
    if "clang" in first.lower():
        family = "clang"
    elif "Free Software Foundation" in out or re.search(r"\b(gcc|g\+\+)\b", first):
        family = "gcc"
    else:
        family = compiler.name
    match = _VERSION.search(first)
    return family, match.group(1) if match else "unknown"


def host_toolchain(environ: Mapping[str, str]) -> Toolchain:
    """The CPU leg: CC/CXX or cc/c++ from PATH, identified by family and version."""
    cc = find_compiler(CC, ("cc", "gcc", "clang"), environ)
    cxx = find_compiler(CXX, ("c++", "g++", "clang++"), environ)
    cc_family, cc_version = compiler_version(cc)
    cxx_family, cxx_version = compiler_version(cxx)
    return Toolchain(
        kind=cc_family,
        identity=safe_identity(f"{cc_family}-{cc_version}"),
        compilers={
            "C": f"{cc_family} {cc_version} ({cc})",
            "CXX": f"{cxx_family} {cxx_version} ({cxx})",
        },
        details={"version": cc_version},
        cmake_args=(f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}"),
    )
