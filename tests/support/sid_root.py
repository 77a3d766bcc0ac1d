"""A Debian sid root with Debian's ROCm 6.4, made once with mmdebstrap and kept in the test cache.

Debian 12 (this machine) has HIP 5.2; the real llama.cpp needs HIP >= 6.1. Debian sid has
``libamdhip64-dev`` 6.4, ``libhipblas-dev``/``librocblas-dev`` 6.4 and ``hipcc`` on clang 21, so a
sid root gives these tests a real distribution-layout ROCm (``/usr``, clang under
``/usr/lib/llvm-21``, the device libraries in clang's resource folder, CMake configs under
``lib/x86_64-linux-gnu/cmake``) without touching the machine's own packages.

The root is made once (about 3 minutes, 5 GB) in ``<test cache>/sid-rocm/root`` and renamed into place
only when complete, so an interrupted build is never taken for a root. Commands run in it with
``chroot`` as root, with ``/proc`` mounted and ``/dev`` bound (hipcc and Python need both) and this
machine's CA bundle copied in (pip needs it to reach the registry from inside).

The Debian mirror is the one this machine's apt already uses, read from ``/etc/apt/sources.list``
and ``/etc/apt/sources.list.d/`` at run time: no host name is written here.

Another suite's root is made the same way, by :class:`DebianRoot` (trixie's CUDA 12.4:
tests/integration/test_real_tree_cuda12.py). A root that exists but lacks a package its list has gained is
completed with ``apt-get install`` inside, not made again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import tomllib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from scripts.workload.llama_sdist import e2e_cache_root

ROOT = Path(__file__).resolve().parents[2]

SUITE = "sid"
# What the ROCm leg needs: the compiler (hipcc pulls clang 21 and the device libraries), the
# libraries llama.cpp's ggml-hip finds with find_package, and what runs the pipeline itself
# (libssl-dev: the shipped build links OpenSSL for llama.cpp's HTTPS).
PACKAGES = (
    "hipcc",
    "libhipblas-dev",
    "librocblas-dev",
    "python3",
    "python3-venv",
    "git",
    "g++",
    "libssl-dev",
)
# sid's Release files are past their validity date on the mirror this machine uses.
_APT_OPTION = 'Acquire::Check-Valid-Until "false"'
_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
BUILD_TIMEOUT_S = 1800
# Inside the root: the pipeline's dependencies (the checkout itself is bound in and on PYTHONPATH).
VENV = "/opt/pipeline-venv"
SOURCE_INSIDE = "/src"


class SidRootUnavailable(AssertionError):
    """The root cannot be made here; the message says what is missing."""


def debian_mirror(sources: Sequence[Path] = _SOURCES) -> str:
    """The URL of the Debian archive this machine's apt reads (not its security archive)."""
    for place in sources:
        files = sorted(place.iterdir()) if place.is_dir() else [place] if place.is_file() else []
        for file in files:
            if file.suffix not in (".list", ".sources", ""):
                continue
            for url in _urls(file.read_text(encoding="utf-8", errors="replace")):
                if not url.rstrip("/").endswith("-security") and "/debian" in url:
                    return url.rstrip("/")
    raise SidRootUnavailable(f"no Debian archive in {', '.join(map(str, sources))}")


def _urls(text: str) -> Iterator[str]:
    # One-line style ("deb [opts] URL suite comp") and deb822 style ("URIs: URL ...").
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("URIs:"):
            yield from line.removeprefix("URIs:").split()
        elif m := re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)", line):
            yield m.group(1)


@dataclass(frozen=True, kw_only=True)
class DebianRoot:
    """A Debian ``suite`` root with ``packages``, made once in ``<test cache>/<folder>/root``.

    ``marker``: a file (relative to the root) that only a finished root holds; ``components``: the
    archive areas apt reads (trixie's CUDA toolkit is in ``non-free``).
    """

    suite: str
    packages: tuple[str, ...]
    folder: str
    marker: str
    components: tuple[str, ...] = ("main",)

    def made(self, cache: Path | None = None) -> Path:
        """The root, made with mmdebstrap when it is not there yet, completed when its list grew.

        One maker at a time: a caller waits for a root another thread or process is making (see
        :func:`prepare_in_background`) and then takes it as made.
        """
        home = (cache or e2e_cache_root()) / self.folder
        root = home / "root"
        home.mkdir(parents=True, exist_ok=True)
        with FileLock(str(home / ".lock")):
            if not (root / self.marker).exists():
                self._make(home, root)
            self._complete(home, root)
        return root

    def _make(self, home: Path, root: Path) -> None:
        tool = _privileged_tool("mmdebstrap", f"making the {self.suite} root")
        # A maker that was stopped (a test run ended while a background maker worked) leaves its folder.
        for stale in home.glob(".building-*"):
            shutil.rmtree(stale, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=home, prefix=".building-") as tmp:
            partial = Path(tmp) / "root"
            proc = subprocess.run(
                [tool, "--variant=apt", f"--aptopt={_APT_OPTION}", f"--components={','.join(self.components)}",
                 f"--include={','.join(self.packages)}", self.suite, str(partial), debian_mirror()],
                capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                raise SidRootUnavailable(
                    f"mmdebstrap {self.suite} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
                )
            partial.replace(root)

    def _complete(self, home: Path, root: Path) -> None:
        """Install, inside the root, the packages of the list it lacks (a root made from a shorter list)."""
        stamp = home / "packages"
        wanted = "\n".join(self.packages)
        if stamp.is_file() and stamp.read_text(encoding="utf-8") == wanted:
            return
        missing = self.missing(root)
        if missing:
            with mounted(root):
                for argv in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *missing]):
                    proc = run_in(
                        root, argv, env={"DEBIAN_FRONTEND": "noninteractive"}, timeout=BUILD_TIMEOUT_S
                    )
                    if proc.returncode != 0:
                        raise SidRootUnavailable(
                            f"{' '.join(argv[:3])} in the {self.suite} root failed:\n{proc.stderr[-3000:]}"
                        )
        stamp.write_text(wanted, encoding="utf-8")

    def missing(self, root: Path) -> list[str]:
        """The packages of the list that ``root``'s dpkg does not have installed."""
        # The root's dpkg database read from here: no mount while another test may be using the root.
        status = subprocess.run(["dpkg-query", f"--admindir={root / 'var/lib/dpkg'}", "-W",
                                 "-f=${Package} ${db:Status-Status}\n", *self.packages],
                                capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        installed = {line.split()[0] for line in status.stdout.splitlines() if line.endswith(" installed")}
        return [p for p in self.packages if p not in installed]


def _privileged_tool(name: str, doing: str) -> str:
    if os.geteuid() != 0:
        raise SidRootUnavailable(f"{doing} needs root (mmdebstrap, chroot)")
    tool = shutil.which(name)
    if tool is None:
        raise SidRootUnavailable(f"{name} is not installed (apt-get install {name})")
    return tool


SID = DebianRoot(suite=SUITE, packages=PACKAGES, folder="sid-rocm", marker="usr/bin/hipcc")
# Trixie's CUDA 12.4 and what the pipeline needs to run and build in the root (libssl-dev: the
# shipped build links OpenSSL). nvidia-cuda-toolkit pulls g++-13, its host compiler.
TRIXIE_CUDA = DebianRoot(
    suite="trixie",
    packages=("nvidia-cuda-toolkit", "python3", "python3-venv", "git", "g++", "libssl-dev"),
    folder="trixie-cuda",
    marker="usr/lib/nvidia-cuda-toolkit/bin/nvcc",
    components=("main", "contrib", "non-free", "non-free-firmware"),
)


def sid_root(cache: Path | None = None) -> Path:
    """The sid root in the test cache, made with mmdebstrap when it is not there yet."""
    return SID.made(cache)


@contextlib.contextmanager
def mounted(root: Path, binds: Sequence[tuple[Path, str]] = ()) -> Iterator[Path]:
    """``root`` with /proc, /dev and each ``(host folder, path inside)`` of ``binds`` mounted, then unmounted."""
    # pip inside reaches the registry with this machine's trust store.
    (root / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_CA_BUNDLE, root / "etc/ssl/certs/ca-certificates.crt")
    done: list[Path] = []
    try:
        for source, inside, args in [
            (Path("proc"), "/proc", ["-t", "proc"]),
            (Path("/dev"), "/dev", ["--rbind"]),
            *((src, dst, ["--bind"]) for src, dst in binds),
        ]:
            target = root / inside.lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", *args, str(source), str(target)], check=True, capture_output=True)
            done.append(target)
        yield root
    finally:
        # Innermost first; --lazy because /dev's recursive bind holds sub-mounts (pts, shm).
        for target in reversed(done):
            subprocess.run(["umount", "--recursive", "--lazy", str(target)], check=False, capture_output=True)


def run_in(
    root: Path,
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str = "/",
    timeout: float = 1800,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` inside ``root`` (already :func:`mounted`) as root, with a clean environment."""
    base = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        ["chroot", str(root), "/usr/bin/env", "-i", "-C", cwd, *(f"{k}={v}" for k, v in {**base, **(env or {})}.items()),
         *argv],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def pipeline_venv(root: Path) -> str:
    """``python`` of a venv inside ``root`` with the pipeline's dependencies (pyproject.toml's), made once.

    The stamp is the dependency list's digest: a changed pyproject makes it again. The checkout is
    not installed (that would write egg-info into it); the caller binds it at :data:`SOURCE_INSIDE`
    and puts it on PYTHONPATH.
    """
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    digest = hashlib.sha256("\n".join(deps).encode()).hexdigest()
    stamp = root / VENV.lstrip("/") / ".pipeline-deps"
    python = f"{VENV}/bin/python"
    with FileLock(str(root.parent / ".venv.lock")):
        if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
            return python
        _make_venv(root, deps)
        stamp.write_text(digest, encoding="utf-8")
    return python


def _make_venv(root: Path, deps: Sequence[str]) -> None:
    python = f"{VENV}/bin/python"
    shutil.rmtree(root / VENV.lstrip("/"), ignore_errors=True)
    with mounted(root):
        for argv in (["python3", "-m", "venv", VENV], [python, "-m", "pip", "install", "--quiet", *deps]):
            proc = run_in(root, argv, timeout=1200)
            if proc.returncode != 0:
                raise SidRootUnavailable(f"{' '.join(argv[:4])} in {root} failed:\n{proc.stderr[-3000:]}")


def prepare_in_background(roots: Iterable[DebianRoot]) -> list[threading.Thread]:
    """Start making each of ``roots`` and its pipeline venv in a thread of its own, and return at once.

    Making a root is mostly waiting on the mirror (minutes, 5 GB): started when the test run starts
    (tests/conftest.py), it overlaps the tests that compile before the ones that need it, which then
    find it made or wait for it (:meth:`DebianRoot.made` locks). A failure here is only logged: the
    test that needs the root makes it again and fails with the reason.
    """

    def prepare(debian: DebianRoot) -> None:
        try:
            pipeline_venv(debian.made())
        except Exception as exc:
            print(f"\nmaking the {debian.suite} root ahead failed; its tests will make it: {exc}", flush=True)

    threads = [
        threading.Thread(target=prepare, args=(debian,), name=f"{debian.suite}-root", daemon=True)
        for debian in dict.fromkeys(roots)
    ]
    for thread in threads:
        thread.start()
    return threads
