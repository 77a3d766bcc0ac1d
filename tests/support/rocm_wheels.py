"""TheRock-shaped Python wheels made from Debian's clang, and a PEP 691 / 503 simple index serving them.

The wheels mirror TheRock's packaging (its ``build_tools/packaging/python``):
``rocm`` carries the ``rocm_sdk`` module (``rocm-sdk path --root`` and
``rocm-sdk init``), ``rocm-sdk-core`` the real files (clang and its resource
headers under ``_rocm_sdk_core/lib/llvm``), ``rocm-sdk-devel`` a ``_devel.tar``
that ``init`` expands into ``_rocm_sdk_devel/`` beside it, with relative
symlinks into the core (wheels cannot hold symlinks), and
``rocm-sdk-libraries-<family>`` the family's part. The devel root is the same
tree as the tarball of :func:`tests.support.rocm_leg.make_therock_from_debian_clang`.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from tests.support.httpserver import LocalServer, Response
from tests.support.rocm_leg import debian_llvm

PLATFORM_TAG = "py3-none-manylinux_2_28_x86_64"
PURE_TAG = "py3-none-any"
SIMPLE = "/simple/"

_ROCM_SDK_MAIN = '''"""rocm-sdk: the ROCm SDK's own CLI (as TheRock's: path --root/--bin/--cmake, init)."""
import argparse
import sys
import tarfile
from pathlib import Path


def get_devel_root(force_initialize=False):
    import rocm_sdk_devel

    site = Path(rocm_sdk_devel.__file__).parent.parent
    archive = Path(rocm_sdk_devel.__file__).parent / "_devel.tar"
    root = site / "_rocm_sdk_devel"
    if archive.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(site)
        archive.unlink()
    return root


def main(argv=None):
    p = argparse.ArgumentParser(prog="rocm-sdk")
    sub = p.add_subparsers(dest="cmd", required=True)
    path = sub.add_parser("path")
    group = path.add_mutually_exclusive_group(required=True)
    for flag in ("--root", "--bin", "--cmake"):
        group.add_argument(flag, action="store_true")
    init = sub.add_parser("init")
    init.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    root = get_devel_root(force_initialize=args.cmd == "init")
    if args.cmd == "init":
        if not args.quiet:
            print(f"Devel links initialized in '{root}'")
        return
    print(root / "lib" / "cmake" if args.cmake else root / "bin" if args.bin else root)


if __name__ == "__main__":
    main()
'''


def dist_name(project: str) -> str:
    """A wheel file's name part: the project with '-' as '_' (PEP 427)."""
    return project.replace("-", "_")


def make_wheel(
    folder: Path,
    project: str,
    version: str,
    files: Mapping[str, bytes],
    *,
    tag: str = PLATFORM_TAG,
    scripts: Mapping[str, str] | None = None,
) -> Path:
    """A real wheel (METADATA, WHEEL, RECORD with every file's hash) of ``files`` (arcname -> bytes)."""
    name = dist_name(project)
    info = f"{name}-{version}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode()
    members[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    )
    if scripts:
        lines = "".join(f"{k} = {v}\n" for k, v in scripts.items())
        members[f"{info}/entry_points.txt"] = f"[console_scripts]\n{lines}".encode()
    record = []
    for arc, body in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(body)}")
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, body in members.items():
            zi = zipfile.ZipInfo(arc, date_time=(2025, 1, 4, 0, 0, 0))
            zi.external_attr = (0o100755 if "/bin/" in arc else 0o100644) << 16
            zf.writestr(zi, body, zipfile.ZIP_DEFLATED)
    return path


def _devel_tar() -> bytes:
    """``_rocm_sdk_devel/``: the devel root, links into the core package as TheRock's devel tree has them."""
    llvm = debian_llvm()
    resource = next((llvm / "lib" / "clang").iterdir())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add(name: str, body: bytes | None = None, link: str | None = None) -> None:
            info = tarfile.TarInfo(f"_rocm_sdk_devel/{name}")
            info.mtime = 1736000000
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                data = body or b""
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

        add("__init__.py", b"")
        add("lib/llvm/bin/clang", link="../../../../_rocm_sdk_core/lib/llvm/bin/clang")
        add("lib/llvm/bin/clang++", link="clang")
        for header in sorted((resource / "include").glob("*.h")):
            add(
                f"lib/llvm/lib/clang/{resource.name}/include/{header.name}",
                link=f"../../../../../../../_rocm_sdk_core/lib/llvm/lib/clang/{resource.name}/include/{header.name}",
            )
        add("bin/amdclang++", link="../lib/llvm/bin/clang++")
    return buf.getvalue()


def make_therock_wheels(
    folder: Path, version: str, family: str, targets: Sequence[str] = ()
) -> dict[str, Path]:
    """The wheels of one build (project -> wheel file) made from Debian's clang: four for a per-family index;
    given ``targets`` (an index for every GPU, kpack-split as TheRock publishes since 2026-08-23), the
    arch-neutral ``rocm-sdk-libraries`` and one ``rocm-sdk-device-<target>`` each, whose files overlay the
    libraries' package folder."""
    llvm = debian_llvm()
    resource = next((llvm / "lib" / "clang").iterdir())
    core = {
        "_rocm_sdk_core/__init__.py": b"",
        "_rocm_sdk_core/lib/llvm/bin/clang": (llvm / "bin" / "clang").read_bytes(),
    }
    for header in sorted((resource / "include").glob("*.h")):
        core[f"_rocm_sdk_core/lib/llvm/lib/clang/{resource.name}/include/{header.name}"] = header.read_bytes()
    libraries = "rocm-sdk-libraries" if targets else f"rocm-sdk-libraries-{family}".lower()
    return {
        "rocm": make_wheel(
            folder,
            "rocm",
            version,
            {
                "rocm_sdk/__init__.py": f"__version__ = {version!r}\n".encode(),
                "rocm_sdk/__main__.py": _ROCM_SDK_MAIN.encode(),
            },
            tag=PURE_TAG,
            scripts={"rocm-sdk": "rocm_sdk.__main__:main"},
        ),
        "rocm-sdk-core": make_wheel(folder, "rocm-sdk-core", version, core),
        "rocm-sdk-devel": make_wheel(
            folder,
            "rocm-sdk-devel",
            version,
            {"rocm_sdk_devel/__init__.py": b"", "rocm_sdk_devel/_devel.tar": _devel_tar()},
        ),
        libraries: make_wheel(folder, libraries, version, {f"_{dist_name(libraries)}/__init__.py": b""}),
        **{
            f"rocm-sdk-device-{t}": make_wheel(
                folder,
                f"rocm-sdk-device-{t}",
                version,
                {f"_rocm_sdk_libraries/lib/rocblas/library/TensileLibrary_{t}.dat": t.encode()},
            )
            for t in targets
        },
    }


def make_index_only_wheels(
    folder: Path, version: str, family: str, targets: Sequence[str] = ()
) -> dict[str, Path]:
    """The wheels of one build holding no toolchain (:func:`make_therock_wheels`' projects): for tests that
    resolve and never install."""
    libraries = "rocm-sdk-libraries" if targets else f"rocm-sdk-libraries-{family}".lower()
    return {
        "rocm": make_wheel(folder, "rocm", version, {"rocm_sdk/__init__.py": b""}, tag=PURE_TAG),
        **{
            p: make_wheel(folder, p, version, {f"_{dist_name(p)}/__init__.py": b""})
            for p in (
                "rocm-sdk-core",
                "rocm-sdk-devel",
                libraries,
                *(f"rocm-sdk-device-{t}" for t in targets),
            )
        },
    }


def serve_family_listing(server: LocalServer, families: Sequence[str]) -> str:
    """The folder page above the per-family indexes (``/simple/``), one link per family; returns its URL."""
    links = "".join(f'<a href="{f}/">{f}/</a><br/>\n' for f in families)
    body = f'<!DOCTYPE html><html><body>\n<a href="../">../</a><br/>\n{links}</body></html>\n'
    server.route(SIMPLE, Response(200, body.encode(), {"Content-Type": "text/html"}))
    return server.url(SIMPLE)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def serve_wheel_index(
    server: LocalServer,
    builds: Sequence[tuple[Mapping[str, Path], datetime | None]],
    *,
    family: str | None,
    html: bool = False,
    hashes: Mapping[str, str] | None = None,
    missing: Sequence[str] = (),
    base: str | None = None,
) -> str:
    """A simple index of ``builds`` (each: project -> wheel, upload time) under ``/simple/<family>/``, or, with
    ``family`` None, one index for every GPU at ``base`` (default ``/simple/``) with its root page listing the
    projects (PEP 691).

    JSON (PEP 691, with PEP 700 upload-time) unless ``html`` (PEP 503, no times).
    ``hashes`` replaces the sha256 the index states for a file name; a file in
    ``missing`` is listed but not served. Returns the index URL (``{family}`` in it for a per-family one).
    """
    base = base or (f"{SIMPLE}{family}/" if family is not None else SIMPLE)
    pages: dict[str, list[dict[str, object]]] = {}
    for wheels, uploaded in builds:
        for project, path in wheels.items():
            url = f"/files/{path.name}"
            sha = (hashes or {}).get(path.name, sha256_of(path))
            pages.setdefault(project, []).append(
                {
                    "filename": path.name,
                    "url": url,
                    "hashes": {"sha256": sha},
                    "upload-time": None if uploaded is None else uploaded.isoformat().replace("+00:00", "Z"),
                }
            )
            if path.name not in missing:
                server.route(
                    url, Response(200, path.read_bytes(), {"Content-Type": "application/octet-stream"})
                )
    for project, files in pages.items():
        if html:
            anchors = "".join(
                f'<a href="{f["url"]}#sha256={f["hashes"]["sha256"]}">{f["filename"]}</a><br/>\n'  # type: ignore[index]
                for f in files
            )
            body = f"<!DOCTYPE html><html><body><h1>Links for {project}</h1>\n{anchors}</body></html>\n"
            server.route(f"{base}{project}/", Response(200, body.encode(), {"Content-Type": "text/html"}))
        else:
            doc = {"meta": {"api-version": "1.1"}, "name": project, "files": files, "versions": []}
            server.route(
                f"{base}{project}/",
                Response(
                    200, json.dumps(doc).encode(), {"Content-Type": "application/vnd.pypi.simple.v1+json"}
                ),
            )
    if family is None:
        root = {"meta": {"api-version": "1.1"}, "projects": [{"name": p} for p in sorted(pages)]}
        server.route(
            base,
            Response(200, json.dumps(root).encode(), {"Content-Type": "application/vnd.pypi.simple.v1+json"}),
        )
        return server.url(base)
    return server.url(f"{SIMPLE}{{family}}/")


# A PEP 517 backend inside the sdist: pip builds it with nothing fetched (--no-build-isolation).
_BACKEND = """import base64, hashlib, pathlib, zipfile

NAME, VERSION = "rocm", pathlib.Path("VERSION").read_text().strip()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    info = f"{NAME}-{VERSION}.dist-info"
    members = {p.as_posix(): p.read_bytes() for p in sorted(pathlib.Path("rocm_sdk").rglob("*.py"))}
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n".encode()
    members[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\\nGenerator: sdist\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    members[f"{info}/entry_points.txt"] = b"[console_scripts]\\nrocm-sdk = rocm_sdk.__main__:main\\n"
    rows = [f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode()},{len(v)}"
            for k, v in members.items()]
    members[f"{info}/RECORD"] = ("\\n".join([*rows, f"{info}/RECORD,,"]) + "\\n").encode()
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / name, "w") as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    return name
"""


def make_selector_sdist(folder: Path, version: str) -> Path:
    """TheRock's ``rocm`` selector as it publishes it: an sdist (here with an in-tree build backend)."""
    top = f"rocm-{version}"
    files = {
        "pyproject.toml": b'[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": _BACKEND.encode(),
        "VERSION": version.encode(),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: rocm\nVersion: {version}\n".encode(),
        "rocm_sdk/__init__.py": f"__version__ = {version!r}\n".encode(),
        "rocm_sdk/__main__.py": _ROCM_SDK_MAIN.encode(),
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime = len(body), 1736000000
            tar.addfile(info, io.BytesIO(body))
    return path
