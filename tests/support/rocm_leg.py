"""The ROCm leg's test builders: a TheRock-shaped toolchain from Debian's clang, its index, its matrix.

The tarball holds a real compiler (clang with its resource headers, under
``lib/llvm/bin`` as in TheRock); :func:`serve_index` serves it with an index
page from a local HTTP server.
"""

from __future__ import annotations

import functools
import hashlib
import tarfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from tests.support.httpserver import LocalServer, Response
from tests.support.projects import write_matrix
from tests.support.runtime_libs import build_runtime
from tests.support.therock_index import html_page


@functools.cache
def debian_llvm() -> Path:
    """Debian's clang 14 (CI installs it), else the newest /usr/lib/llvm-N with a clang."""
    preferred = Path("/usr/lib/llvm-14")
    if (preferred / "bin" / "clang").is_file():
        return preferred
    found = sorted(
        (p for p in Path("/usr/lib").glob("llvm-*") if (p / "bin" / "clang").is_file()),
        key=lambda p: int(p.name.removeprefix("llvm-")) if p.name.removeprefix("llvm-").isdigit() else 0,
    )
    if not found:
        raise AssertionError("no /usr/lib/llvm-N/bin/clang: install Debian's clang (clang-14)")
    return found[-1]


LEG = "rocm-linux-gfx110X"
FAMILY = "gfx110X-all"
VERSION = "7.0.0a20250104"
NEWER = "7.0.0a20250106"  # in the index, after the weekly cutoff of NOW
NOW = "2025-01-08T12:00:00Z"  # cutoff: Saturday 2025-01-04
INDEX = "/tarball-multi-arch/"
UNITS = 8
COMPILATIONS = UNITS + 1


def tarball_name(os_name: str, family: str, version: str) -> str:
    return f"therock-dist-{os_name}-{family}-{version}.tar.gz"


def _add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tar.addfile(info)


def _add_clang(tar: tarfile.TarFile) -> None:
    """Debian's clang as TheRock places its own: ``lib/llvm/bin/clang``, ``clang++``, the resource headers."""
    llvm = debian_llvm()
    resource = next((llvm / "lib" / "clang").iterdir())
    tar.add(llvm / "bin" / "clang", arcname="./lib/llvm/bin/clang")
    _add_link(tar, "./lib/llvm/bin/clang++", "clang")
    for header in sorted((resource / "include").glob("*.h")):
        tar.add(header, arcname=f"./lib/llvm/lib/clang/{resource.name}/include/{header.name}")


def make_therock_from_debian_clang(dest: Path) -> Path:
    """A small TheRock-shaped tarball: clang, clang++ and clang's resource headers."""
    with tarfile.open(dest, "w:gz") as tar:
        _add_clang(tar)
        _add_link(tar, "./bin/amdclang++", "../lib/llvm/bin/clang++")
    return dest


def make_therock_with_runtime(work: Path, dest: Path) -> Path:
    """TheRock's shape with a runtime: clang under ``lib/llvm/bin``, and under ``lib/`` real shared libraries
    shaped like ROCm's with rocBLAS's kernel files, their licenses under ``share/doc/``
    (tests/support/runtime_libs.py, built in ``work``): a bundle of a program that links them carries them."""
    tree = work / "therock-tree"
    build_runtime(tree)
    with tarfile.open(dest, "w:gz") as tar:
        _add_clang(tar)
        tar.add(tree / "lib", arcname="./lib", recursive=True)
        tar.add(tree / "share", arcname="./share", recursive=True)
    return dest


def sha256sum(name: str, body: bytes) -> bytes:
    """``sha256sum``'s output for a file ``name`` holding ``body``."""
    return f"{hashlib.sha256(body).hexdigest()}  {name}\n".encode()


def serve_index(
    server: LocalServer,
    tarballs: dict[str, bytes],
    extra: Sequence[str] = (),
    checksums: Mapping[str, bytes] | None = None,
) -> str:
    """An index page listing ``tarballs`` and their ``.sha256sum`` (all served) and ``extra`` names (listed only).

    Each tarball's checksum file is correct unless ``checksums`` gives its body
    (a wrong or malformed checksum), keyed by tarball name.
    """
    sums = {name: sha256sum(name, body) for name, body in tarballs.items()}
    sums.update(checksums or {})
    listed = [*tarballs, *(name + ".sha256sum" for name in sums), *extra]
    entries = [(name, "2025-01-04T09:30:00Z") for name in listed]
    server.route(INDEX, Response(200, html_page(entries).encode(), {"Content-Type": "text/html"}))
    for name, body in tarballs.items():
        server.route(INDEX + name, Response(200, body, {"Content-Type": "application/gzip"}))
    for name, body in sums.items():
        server.route(INDEX + name + ".sha256sum", Response(200, body, {"Content-Type": "text/plain"}))
    return server.url(INDEX)


def serve_published(server: LocalServer, tarball: bytes, published: Mapping[str, datetime]) -> str:
    """TheRock's index page with one linux ``FAMILY`` tarball (``tarball``) and its checksum per version, each
    published when given (what a weekly policy reads); all served, and each tarball's size to a HEAD request
    (what ``cache-key`` asks before it caches an archive)."""
    entries: list[tuple[str, object]] = []
    for version, when in published.items():
        name = tarball_name("linux", FAMILY, version)
        entries += [(name, when), (name + ".sha256sum", when)]
        for method in ("GET", "HEAD"):
            server.route(
                INDEX + name, Response(200, tarball, {"Content-Type": "application/gzip"}), method=method
            )
        server.route(INDEX + name + ".sha256sum", Response(200, sha256sum(name, tarball)))
    server.route(INDEX, Response(200, html_page(entries).encode(), {"Content-Type": "text/html"}))
    return server.url(INDEX)


def rocm_matrix(path: Path, index_url: str, compiler_check: str) -> Path:
    return write_matrix(
        path,
        compiler_check=compiler_check,
        extra=f"""
[rocm]
policy = "weekly"
index_url = "{index_url}"

[legs.{LEG}]
backend = "rocm"
os = "linux"
family = "{FAMILY}"
targets = ["gfx1100", "gfx1101", "gfx1102", "gfx1103"]
cmake_args = ["-DGGML_HIP=ON"]

[legs.rocm-windows-gfx1151]
backend = "rocm"
os = "windows"
family = "gfx1151"
targets = ["gfx1151"]
""",
    )
