"""Prepare ``.gpu-check/`` here for ``scripts/gpu_check/gpu_check.sh`` on a lent GPU machine that has no network.

What travels with the working tree (64 MiB at most, ``.gpu-check`` named in
the device call's ``carry``):

- ``llama.cpp.tar.gz``: the real tree (llama-cpp-python 0.3.36's vendored
  llama.cpp, from the test cache: scripts/workload/llama_sdist.py) trimmed to
  what the reduced cuda leg builds and check-bundle reads: the top
  CMakeLists, cmake/, ggml/, src/, include/, common/, vendor/, licenses/,
  the three programs of scripts/workload/reduction.py and the tokenizer
  check's vocab with its test pair (about 6 MB instead of 176 MB);
- ``wheels/``: the pipeline's runtime dependencies for the machine's Python
  (``--python-version``, 3.12 by default), downloaded with pip, binary
  only, as pyproject.toml lists them (``requirements()``); the machine has
  CMake and Ninja of its own;
- ``vulkan-sdk/``: for ``gpu_check.sh --backend vulkan``, the SDK-shaped
  folder of the real-tree test (scripts/workload/trixie_vulkan.py: Debian 13's
  Vulkan 1.4.309 headers and loader) with this machine's glslc, which
  travels with the libshaderc it runs on (``bin/glslc`` is a wrapper that
  finds it in ``lib/``): the lent machine need not have either (about 26 MB,
  most of it the C++ headers).

``gpu_check.sh --backend rocm`` needs nothing more here: it builds with the
lent AMD machine's own ROCm (docs/gpu-checks.md, "On a lent AMD GPU").

Prints the sizes and the device call. Usage: ``python3 -m scripts.gpu_check.prepare`` from the repository root.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

from scripts.workload.llama_sdist import SDIST_VERSION, e2e_cache_root, fetch_sdist
from scripts.workload.trixie_vulkan import trixie_vulkan_sdk

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".gpu-check"
LIMIT_BYTES = 64 * 1024 * 1024
# The parts of the tree the reduced cuda leg configures and builds, and the smoke run's vocab.
KEEP = (
    "CMakeLists.txt",
    "LICENSE",
    "cmake/",
    "ggml/",
    "src/",
    "include/",
    "common/",
    "vendor/",
    "licenses/",
    "tools/gguf-split/",
    "tools/tokenize/",
    "examples/simple/",
    "models/ggml-vocab-llama-spm.gguf",
    "models/ggml-vocab-llama-spm.gguf.inp",
    "models/ggml-vocab-llama-spm.gguf.out",
)
# The pipeline's dependencies (pyproject.toml's) the lent machine does not need: its own CMake and Ninja,
# and what is imported only for a macOS bundle (macholib) or a history page (plotly, 15 MB).
NOT_CARRIED = ("cmake", "ninja", "macholib", "plotly")


def requirements() -> list[str]:
    """pyproject.toml's dependencies less :data:`NOT_CARRIED`: what a build, a bundle (its SBOM) and check-bundle use."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return [dep for dep in deps if re.split(r"[\s\[<>=!~;]", dep, maxsplit=1)[0] not in NOT_CARRIED]


PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
    "any",
)


def trimmed_tree(dest: Path) -> int:
    """Write the trimmed tree as ``dest`` (members relative to the tree); the number of files."""
    prefix = f"llama_cpp_python-{SDIST_VERSION}/vendor/llama.cpp/"
    count = 0
    with tarfile.open(fetch_sdist(e2e_cache_root())) as src, tarfile.open(dest, "w:gz") as out:
        for member in src:
            rel = member.name.removeprefix(prefix)
            if rel == member.name or not rel.startswith(KEEP) or not (member.isfile() or member.isdir()):
                continue
            # A fresh header: the sdist's long names sit in pax headers, which would keep the old path.
            info = tarfile.TarInfo(rel)
            info.type, info.mode, info.size, info.mtime = member.type, member.mode, member.size, member.mtime
            out.addfile(info, src.extractfile(member) if member.isfile() else None)
            count += member.isfile()
    return count


def vulkan_sdk(dest: Path) -> Path:
    """The real-tree test's trixie SDK copied to ``dest``, its glslc made to run without this machine's libshaderc."""
    shutil.copytree(trixie_vulkan_sdk(e2e_cache_root()), dest, symlinks=True)
    needed = subprocess.run(
        ["ldd", str(dest / "bin" / "glslc")], capture_output=True, text=True, check=True
    ).stdout
    # glslc is a front end: the compiler is libshaderc (Debian's is one shared library, glslang and SPIRV-Tools in it).
    for line in needed.splitlines():
        name, _, where = line.strip().partition(" => ")
        if name.startswith("libshaderc"):
            shutil.copy2(Path(where.split(" (")[0]).resolve(), dest / "lib" / name)
    (dest / "bin" / "glslc").rename(dest / "bin" / "glslc.bin")
    wrapper = dest / "bin" / "glslc"
    wrapper.write_text(
        "#!/bin/sh\n# glslc with the libshaderc beside it (scripts/gpu_check/prepare.py).\n"
        'here=$(dirname "$0")\n'
        'LD_LIBRARY_PATH="$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/glslc.bin" "$@"\n'
    )
    wrapper.chmod(0o755)
    return dest


def download_wheels(dest: Path, python_version: str) -> list[str]:
    abi = "cp" + python_version.replace(".", "")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--only-binary",
        ":all:",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        "--abi",
        abi,
        "--abi",
        "abi3",
        "--abi",
        "none",
        *(arg for p in PLATFORMS for arg in ("--platform", p)),
        "-d",
        str(dest),
        *requirements(),
    ]
    subprocess.run(cmd, check=True)
    return sorted(p.name for p in dest.glob("*.whl"))


def travelling_bytes() -> int:
    """What the device call carries: the files git tracks or would add, plus ``.gpu-check/``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
    tree = sum((ROOT / name).stat().st_size for name in listed if name and (ROOT / name).is_file())
    return tree + sum(p.stat().st_size for p in WORK.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python-version", default="3.12", help="the lent machine's Python (default 3.12)")
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    (WORK / "wheels").mkdir(parents=True)
    files = trimmed_tree(WORK / "llama.cpp.tar.gz")
    sdk = vulkan_sdk(WORK / "vulkan-sdk")
    wheels = download_wheels(WORK / "wheels", args.python_version)
    (WORK / "python-version").write_text(args.python_version + "\n")
    size = travelling_bytes()
    print(f"gpu-check: {WORK / 'llama.cpp.tar.gz'}: {files} files of the tree")
    print(f"gpu-check: {sdk}: Debian 13's Vulkan headers and loader, glslc with its libshaderc")
    print(f"gpu-check: {len(wheels)} wheels for Python {args.python_version}: {', '.join(wheels)}")
    print(f"gpu-check: the working tree that travels: {size / 2**20:.1f} MiB of {LIMIT_BYTES / 2**20:.0f}")
    if size > LIMIT_BYTES:
        print("gpu-check: too large to travel", file=sys.stderr)
        return 1
    for backend in ("cuda", "vulkan"):
        print(
            f'gpu-check: device call: run(command="bash scripts/gpu_check/gpu_check.sh --backend {backend}", '
            'carry=[".gpu-check"], timeout_s=500)'
        )
    print(
        'gpu-check: on a lent AMD machine: run(command="bash scripts/gpu_check/gpu_check.sh --backend rocm", '
        'carry=[".gpu-check"], timeout_s=500)'
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
