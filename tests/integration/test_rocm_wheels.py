"""The ROCm leg from TheRock's wheels: real wheels made here, a local simple index, pip, rocm-sdk, a real build.

The wheels hold Debian's clang laid out as TheRock packages it
(tests/support/rocm_wheels.py); a PEP 691 index on 127.0.0.1 serves several
nightly versions with PEP 700 upload times. The leg resolves one by the run's
policy, pip installs exactly the resolved files with their hashes, ``rocm-sdk
path --root`` names the ROCm root, and the generated project builds with it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.httpserver import LocalServer, Response
from tests.support.inputs import toolchains_dir
from tests.support.pipeline_cli import ROOT, build_leg, run_pipeline
from tests.support.projects import write_cpp_project
from tests.support.rocm_leg import (
    COMPILATIONS,
    FAMILY,
    LEG,
    NEWER,
    NOW,
    UNITS,
    VERSION,
    make_therock_from_debian_clang,
    rocm_matrix,
    serve_index,
    tarball_name,
)
from tests.support.rocm_wheels import (
    make_index_only_wheels,
    make_therock_wheels,
    serve_family_listing,
    serve_wheel_index,
    sha256_of,
)

OLDER = "7.0.0a20250102"
# Uploaded on their build dates; NEWER is after the weekly cutoff of NOW (Saturday 2025-01-04).
UPLOADS = {
    OLDER: datetime(2025, 1, 2, 9, 30, tzinfo=UTC),
    VERSION: datetime(2025, 1, 4, 9, 30, tzinfo=UTC),
    NEWER: datetime(2025, 1, 6, 9, 30, tzinfo=UTC),
}


@pytest.fixture(scope="module")
def wheel_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    root = tmp_path_factory.mktemp("wheels")
    return {v: make_therock_wheels(root / v, v, FAMILY) for v in UPLOADS}


def wheels_matrix(path: Path, index_url: str, compiler_check: str = "content") -> Path:
    rocm_matrix(path, "http://127.0.0.1:9/unused/", compiler_check)
    # The Windows leg's wheels install on Windows only: this matrix keeps the Linux leg.
    text = path.read_text().split("[legs.rocm-windows-gfx1151]")[0]
    return _set(
        path,
        text.replace(
            'policy = "weekly"\n',
            f'policy = "weekly"\ndistribution = "wheels"\nwheel_index_url = "{index_url}"\n',
        ),
    )


def _set(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def serve_all(server: LocalServer, wheel_sets: dict[str, dict[str, Path]], **kwargs: object) -> str:
    return serve_wheel_index(
        server, [(wheel_sets[v], t) for v, t in UPLOADS.items()], family=FAMILY, **kwargs
    )  # type: ignore[arg-type]


def workspace(tmp_path: Path, index_url: str, units: int = UNITS) -> Path:
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=units)
    wheels_matrix(ws / "matrix.toml", index_url)
    return ws


def test_wheel_leg_resolves_installs_builds_and_hits_after_a_reinstall(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    index_url = serve_all(http_server, wheel_sets)
    ws = workspace(tmp_path, index_url)
    cache = tmp_path / "ccache"

    first = build_leg(ws, LEG, cache, "--now", NOW)
    tc = first["toolchain"]
    assert tc["kind"] == "rocm" and tc["details"]["origin"] == "wheels"
    assert tc["identity"].startswith(f"rocm-{VERSION}-wheels-")
    # Exactly the resolved build's four files, each with the sha256 of the file served.
    listed = dict(item.split("#sha256=") for item in tc["details"]["wheels"].split())
    assert listed == {p.name: sha256_of(p) for p in wheel_sets[VERSION].values()}
    # rocm-sdk path --root: the expanded devel tree inside the install, clang reached through its links.
    root = Path(tc["details"]["root"])
    assert root.name == "_rocm_sdk_devel" and root.parent.parent.parent == toolchains_dir()
    assert (root / "lib/llvm/bin/clang").is_symlink()
    assert f"-DCMAKE_C_COMPILER={root}/lib/llvm/bin/clang" in first["cmake_args"]
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)
    for wheel in wheel_sets[VERSION].values():
        assert http_server.hits(f"/files/{wheel.name}") == 1
    for wheel in wheel_sets[NEWER].values():
        assert http_server.hits(f"/files/{wheel.name}") == 0

    # A fresh pip install of the same wheels: every file gets a new mtime.
    install = Path(tc["details"]["install_root"])
    clang_mtime = (install / "site-packages/_rocm_sdk_core/lib/llvm/bin/clang").stat().st_mtime_ns
    shutil.rmtree(install)
    second = build_leg(ws, LEG, cache, "--now", NOW)
    assert second["toolchain"]["identity"] == tc["identity"]
    assert (install / "site-packages/_rocm_sdk_core/lib/llvm/bin/clang").stat().st_mtime_ns != clang_mtime
    for wheel in wheel_sets[VERSION].values():
        assert http_server.hits(f"/files/{wheel.name}") == 1, "re-installed from the download cache"
    assert (second["ccache"]["hits"], second["ccache"]["misses"]) == (COMPILATIONS, 0)

    # The complete install is reused as is: nothing re-installed.
    third = build_leg(ws, LEG, cache, "--now", NOW)
    assert (install / "site-packages/_rocm_sdk_core/lib/llvm/bin/clang").stat().st_mtime_ns != clang_mtime
    assert third["ccache"]["hits"] == COMPILATIONS


def test_resolve_records_the_wheels_and_replays_an_earlier_moment(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    index_url = serve_all(http_server, wheel_sets)
    ws = workspace(tmp_path, index_url, units=1)
    out = tmp_path / "out"
    for now, policy, expected in [
        (NOW, "weekly", VERSION),
        (NOW, "latest", NEWER),
        ("2025-01-03T12:00:00Z", "latest", OLDER),
        (NOW, OLDER, OLDER),
    ]:
        proc = run_pipeline(
            [
                "--matrix",
                str(ws / "matrix.toml"),
                "resolve",
                "--no-source",
                "--out",
                str(out),
                "--now",
                now,
                "--rocm-version",
                policy,
            ]
        )
        assert proc.returncode == 0, proc.stderr
        entry = json.loads((out / "resolved.json").read_text())["legs"][LEG]
        assert (entry["distribution"], entry["version"]) == ("wheels", expected), (now, policy)
        assert {w["file"]: w["sha256"] for w in entry["wheels"]} == {
            p.name: sha256_of(p) for p in wheel_sets[expected].values()
        }
        assert entry["published"] == UPLOADS[expected].strftime("%Y-%m-%dT%H:%M:%SZ")


def test_hash_mismatch_is_refused_and_nothing_is_installed(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    core = wheel_sets[VERSION]["rocm-sdk-core"]
    index_url = serve_all(http_server, wheel_sets, hashes={core.name: "0" * 64})
    ws = workspace(tmp_path, index_url, units=1)
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            LEG,
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--now",
            NOW,
            "--no-bundle",
        ]
    )
    assert proc.returncode == 7, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "sha256 mismatch" in proc.stderr and core.name in proc.stderr
    assert not toolchains_dir().exists() or not [
        p for p in toolchains_dir().iterdir() if not p.name.startswith(".")
    ]


def test_a_missing_wheel_is_one_error_and_nothing_is_installed(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    devel = wheel_sets[VERSION]["rocm-sdk-devel"]
    index_url = serve_all(http_server, wheel_sets, missing=[devel.name])
    ws = workspace(tmp_path, index_url, units=1)
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            LEG,
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--now",
            NOW,
            "--no-bundle",
        ]
    )
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr and "404" in proc.stderr and devel.name in proc.stderr
    assert not toolchains_dir().exists() or not [
        p for p in toolchains_dir().iterdir() if not p.name.startswith(".")
    ]


def test_a_failing_index_is_retried_then_resolves_and_a_dead_one_is_one_error(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    index_url = serve_all(http_server, wheel_sets)
    page = f"/simple/{FAMILY}/rocm-sdk-core/"
    good = http_server._routes[("GET", page)][0]
    # Down, then rate-limited (a slow index asking to wait), then the page.
    http_server.route(page, Response(503, b"busy"), Response(429, b"slow down", {"Retry-After": "0"}), good)
    ws = workspace(tmp_path, index_url, units=1)
    env = {"PIPELINE_HTTP_BACKOFF": "0"}
    args = [
        "--matrix",
        str(ws / "matrix.toml"),
        "resolve",
        "--no-source",
        "--out",
        str(tmp_path / "out"),
        "--now",
        NOW,
    ]
    proc = run_pipeline(args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert http_server.hits(page) == 3
    assert "HTTP 503" in proc.stderr and "HTTP 429" in proc.stderr  # each retry's wait is said

    http_server.route(page, Response(503, b"down"))
    proc = run_pipeline(args, env=env)
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{http_server.url(page)}: failed after" in proc.stderr


def test_a_leg_from_wheels_and_from_a_tarball_of_the_same_content_give_identical_bundles(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    wheel_index = serve_all(http_server, wheel_sets)
    tarball = make_therock_from_debian_clang(tmp_path / "therock.tar.gz").read_bytes()
    tar_index = serve_index(http_server, {tarball_name("linux", FAMILY, VERSION): tarball})
    bundles = {}
    for distribution in ("tarball", "wheels"):
        ws = tmp_path / distribution
        write_cpp_project(ws / "project", units=2)
        if distribution == "wheels":
            wheels_matrix(ws / "matrix.toml", wheel_index)
        else:
            rocm_matrix(ws / "matrix.toml", tar_index, "content")
        run_pipeline(
            [
                "--matrix",
                str(ws / "matrix.toml"),
                "build",
                LEG,
                "--source",
                str(ws / "project"),
                "--out",
                str(ws / "out"),
                "--ccache-dir",
                str(tmp_path / f"cc-{distribution}"),
                "--now",
                NOW,
                "--tag",
                "b1",
            ],
            check=True,
        )
        record = json.loads((ws / "out" / LEG / "record.json").read_text())
        assert record["toolchain"]["details"]["origin"] == (
            "download" if distribution == "tarball" else "wheels"
        )
        bundles[distribution] = ws / "out" / record["bundle"]
    proc = run_pipeline(["compare", str(bundles["tarball"]), str(bundles["wheels"]), "--json"])
    result = json.loads(proc.stdout)
    # Every file is the same; the manifests differ only in where the toolchain came from.
    assert result["identical_files"] == ["LICENSE", "demo"], result
    assert (result["differing"], result["only_in_a"], result["only_in_b"]) == ([], [], [])
    assert result["manifest_differences"], "the two manifests name their own toolchain"
    assert all(d.startswith("toolchain.") for d in result["manifest_differences"]), result


def test_nox_leg_session_from_wheels_resolves_installs_builds_and_rebuilds_warm(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    """`nox -s rocm-linux-gfx110X` with rocm.distribution = "wheels": resolve, pip install, build; again warm."""
    index_url = serve_all(http_server, wheel_sets)
    ws = workspace(tmp_path, index_url)
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "nox",
        "-f",
        str(ROOT / "noxfile.py"),
        "--force-venv-backend",
        "none",
        "-s",
        LEG,
        "--",
        "--source",
        str(ws / "project"),
        "--ccache-dir",
        str(tmp_path / "ccache"),
        "--now",
        NOW,
        "--no-bundle",
    ]
    env = {
        **os.environ,
        "PIPELINE_MATRIX": str(ws / "matrix.toml"),
        "PYTHONPATH": str(ROOT),
        "PIPELINE_OUT": str(out),
    }
    records = []
    for _ in range(2):
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        records.append(json.loads((out / LEG / "record.json").read_text()))
    resolved = json.loads((out / "resolved.json").read_text())["legs"][LEG]
    assert (resolved["distribution"], resolved["version"]) == ("wheels", VERSION)
    first, second = records
    assert first["toolchain"]["identity"] == second["toolchain"]["identity"]
    assert first["toolchain"]["identity"].startswith(f"rocm-{VERSION}-wheels-")
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)
    assert (second["ccache"]["hits"], second["ccache"]["misses"]) == (COMPILATIONS, 0)
    for wheel in wheel_sets[VERSION].values():
        assert http_server.hits(f"/files/{wheel.name}") == 1


def test_compiler_check_toolchain_keys_a_wheel_install_on_its_verified_wheels(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    """The wheels' compilers are links into the core package: still inside the verified install."""
    import hashlib
    import io

    from rich.console import Console

    from pipeline.ccache.compiler_check import resolve_compiler_check
    from pipeline.inputs.matrix import load_matrix
    from tests.support.inputs import prepare_leg_toolchain

    index_url = serve_all(http_server, wheel_sets)
    matrix = load_matrix(wheels_matrix(tmp_path / "matrix.toml", index_url, "toolchain"))
    toolchain = prepare_leg_toolchain(
        matrix, LEG, Console(file=io.StringIO()), now=datetime(2025, 1, 8, 12, tzinfo=UTC)
    )
    check = resolve_compiler_check("toolchain", toolchain)
    wheels = hashlib.sha256(
        "\n".join(sorted(sha256_of(p) for p in wheel_sets[VERSION].values())).encode()
    ).hexdigest()
    assert check.note is None, check.note
    assert check.value.startswith(f"string:{wheels}+")


def test_the_rocm_selector_published_as_an_sdist_is_built_offline_and_installed(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    """TheRock ships `rocm` (the rocm-sdk tool) as an sdist: pip builds it with nothing fetched."""
    from tests.support.rocm_wheels import make_selector_sdist

    builds = {VERSION: {**wheel_sets[VERSION], "rocm": make_selector_sdist(tmp_path / "sdist", VERSION)}}
    index_url = serve_wheel_index(
        http_server, [(builds[VERSION], UPLOADS[VERSION])], family=FAMILY, html=True
    )
    ws = workspace(tmp_path, index_url, units=1)
    record = build_leg(ws, LEG, tmp_path / "ccache", "--now", NOW)
    details = record["toolchain"]["details"]
    assert f"rocm-{VERSION}.tar.gz#sha256={sha256_of(builds[VERSION]['rocm'])}" in details["wheels"].split()
    # PEP 503 HTML states no upload time: the build counts from its date.
    assert "published" not in details
    assert Path(details["root"]).name == "_rocm_sdk_devel"
    assert (Path(details["install_root"]) / "site-packages/rocm_sdk/__main__.py").is_file()


@pytest.fixture(scope="module")
def index_only_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    """Builds to resolve, not to install: no toolchain in them."""
    root = tmp_path_factory.mktemp("index-only")
    return {v: make_index_only_wheels(root / v, v, FAMILY) for v in UPLOADS}


def _serve_index_only(server: LocalServer, sets: dict[str, dict[str, Path]]) -> str:
    return serve_wheel_index(server, [(sets[v], t) for v, t in UPLOADS.items()], family=FAMILY)


@pytest.mark.parametrize("target", [["--leg", LEG], ["--os", "linux", "--family", FAMILY]])
def test_resolve_of_one_leg_reads_the_wheel_index_the_matrix_names(
    target: list[str], http_server: LocalServer, index_only_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    """`resolve --leg` with [rocm] distribution = "wheels": the wheel index, as the whole run; the tarball index is not read."""
    index_url = _serve_index_only(http_server, index_only_sets)
    matrix = wheels_matrix(tmp_path / "matrix.toml", index_url)
    assert 'index_url = "http://127.0.0.1:9/unused/"' in matrix.read_text()  # nothing listens there
    proc = run_pipeline(
        ["--matrix", str(matrix), "resolve", *target, "--now", NOW, "--json"],
        env={"PIPELINE_HTTP_BACKOFF": "0"},
    )
    assert proc.returncode == 0, proc.stderr
    entry = json.loads(proc.stdout)
    assert (entry["distribution"], entry["version"], entry["os"], entry["family"]) == (
        "wheels",
        VERSION,
        "linux",
        FAMILY,
    )
    assert {w["file"]: w["sha256"] for w in entry["wheels"]} == {
        p.name: sha256_of(p) for p in index_only_sets[VERSION].values()
    }
    assert http_server.hits(f"/simple/{FAMILY}/rocm-sdk-core/") == 1


@pytest.mark.parametrize("target", [[], ["--leg", LEG]])
def test_a_family_missing_from_the_wheel_index_exits_6_with_the_families_it_has(
    target: list[str], http_server: LocalServer, index_only_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    """As the tarball index does (exit 6, "the index has: ..."), not a network failure's exit 4 "HTTP 404"."""
    index_url = _serve_index_only(http_server, index_only_sets)
    listing = serve_family_listing(http_server, [FAMILY, "gfx1151"])
    matrix = wheels_matrix(tmp_path / "matrix.toml", index_url)
    matrix.write_text(matrix.read_text().replace(f'family = "{FAMILY}"', 'family = "gfx120X-all"'))
    proc = run_pipeline(
        [
            "--matrix",
            str(matrix),
            "resolve",
            *target,
            "--no-source" if not target else "--json",
            "--now",
            NOW,
            "--out",
            str(tmp_path / "out"),
        ],
        env={"PIPELINE_HTTP_BACKOFF": "0"},
    )
    assert proc.returncode == 6, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    leg = "" if target else f"leg {LEG}: "
    # No "did you mean": gfx110X-all is the nearest spelling, and another GPU.
    assert lines[0] == (
        f"error: {leg}unknown ROCm family 'gfx120X-all' for linux in the wheel index {listing}; "
        f"the index has: gfx110X-all, gfx1151"
    )
    assert http_server.hits("/simple/gfx120X-all/rocm/") == 1  # a 404 is an answer: not retried
    assert not (tmp_path / "out" / "resolved.json").exists()


def test_a_failed_wheel_reinstall_keeps_the_working_install_and_leaves_no_staging_folder(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    """The wheels go through the one installer: a pip that fails never costs the working install."""
    import io

    from rich.console import Console

    from pipeline.archives.extract import MARKER
    from pipeline.backends import toolchain_request
    from pipeline.errors import ToolchainError
    from pipeline.inputs.matrix import load_matrix
    from pipeline.run_resolution import rocm_for_leg
    from pipeline.toolchain.therock_wheels import install_wheels
    from tests.support.inputs import make_inputs

    index_url = serve_all(http_server, wheel_sets)
    matrix = load_matrix(wheels_matrix(tmp_path / "matrix.toml", index_url))
    inputs = make_inputs(matrix, now=datetime(2025, 1, 8, 12, tzinfo=UTC), environ=dict(os.environ))
    request = toolchain_request(inputs, matrix.leg(LEG), rocm=rocm_for_leg(inputs, LEG))
    assert request.rocm is not None
    console = Console(file=io.StringIO())
    install, reused = install_wheels(request.rocm, request, console, python=sys.executable)
    assert not reused
    marker = (install / MARKER).read_text()
    clang = install / "site-packages/_rocm_sdk_core/lib/llvm/bin/clang"
    clang_bytes = clang.read_bytes()
    # An edited install is installed again: here with a Python that has no pip, a real failure.
    edited = install / "site-packages/rocm_sdk/__main__.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "nopip")], check=True)
    with pytest.raises(ToolchainError, match="pip install of the ROCm wheels failed") as err:
        install_wheels(request.rocm, request, console, python=str(tmp_path / "nopip/bin/python"))
    assert "No module named pip" in err.value.message
    # The working install stays whole, with its own marker; nothing half-made is left beside it.
    assert (install / MARKER).read_text() == marker
    assert clang.read_bytes() == clang_bytes
    assert edited.read_text().endswith("# edited\n")
    assert sorted(
        p.name for p in install.parent.iterdir() if not p.name.endswith((".lock", ".holder.json"))
    ) == [install.name]
    # A working pip installs it again, and the next run reuses that install.
    again, reused = install_wheels(request.rocm, request, console, python=sys.executable)
    assert (again, reused) == (install, False)
    assert not edited.read_text().endswith("# edited\n")
    assert install_wheels(request.rocm, request, console, python=sys.executable) == (install, True)


def test_a_wheel_reinstall_interrupted_during_pip_keeps_the_working_install_and_leaves_no_staging_folder(
    http_server: LocalServer, wheel_sets: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    """SIGTERM while pip installs into the one installer's staging folder: the run stops, the old install stays."""
    import time

    from pipeline.archives.extract import MARKER

    index_url = serve_all(http_server, wheel_sets)
    ws = workspace(tmp_path, index_url, units=1)
    first = build_leg(ws, LEG, tmp_path / "ccache", "--now", NOW)
    install = Path(first["toolchain"]["details"]["install_root"])
    edited = install / "site-packages/rocm_sdk/__main__.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    marker = (install / MARKER).read_text()

    # Signalled while pip installs into the staging folder: pip runs for seconds, the poll takes milliseconds.
    # This run's pip alone: its --target is the staging folder beside this test's install.
    pip = str(install.parent / f".{install.name}.")
    args = [
        "--matrix",
        str(ws / "matrix.toml"),
        "build",
        LEG,
        "--source",
        str(ws / "project"),
        "--out",
        str(ws / "out"),
        "--ccache-dir",
        str(tmp_path / "ccache"),
        "--no-bundle",
        "--now",
        NOW,
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "stderr").open("wb"),
    )
    deadline = time.monotonic() + 300
    while not [c for c in _processes_mentioning(pip) if " -m pip install " in c]:
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr").read_text()
        time.sleep(0.005)
    assert [p.name for p in install.parent.iterdir() if p.name.endswith(".partial")], (
        "pip runs in a staging folder"
    )
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 143, (tmp_path / "stderr").read_text()
    stderr = (tmp_path / "stderr").read_text()
    assert "error: interrupted (SIGTERM): child processes stopped" in stderr and "Traceback" not in stderr
    assert _processes_mentioning(pip) == []
    # The working install is as it was, with its marker; nothing half-made is left beside it.
    assert (install / MARKER).read_text() == marker
    assert edited.read_text().endswith("# edited\n")
    assert sorted(
        p.name for p in install.parent.iterdir() if not p.name.endswith((".lock", ".holder.json"))
    ) == [install.name]
    # A plain rerun installs it again.
    again = build_leg(ws, LEG, tmp_path / "ccache", "--now", NOW)
    assert again["toolchain"]["identity"] == first["toolchain"]["identity"]
    assert not edited.read_text().endswith("# edited\n")


def _processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text``, read from /proc."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(cmdline)
    return found


# TheRock's wheels since 2026-08-23: one index per stream for every GPU (https://{stream}.repo.amd.com/rocm/whl-next/,
# the shipped matrix.toml's), kpack-split: an arch-neutral rocm-sdk-libraries and one rocm-sdk-device-<target> per
# GPU target (TheRock's docs/packaging/python_packaging.md at 89553ce3746e). Served here at /<stream>/whl-next/.
TARGETS = ("gfx1100", "gfx1101", "gfx1102", "gfx1103")
DEVICE_SELECTOR = "rocm[libraries,devel,device-gfx1100,device-gfx1101,device-gfx1102,device-gfx1103]"


def _stream_template(url: str, stream: str) -> str:
    return url.replace(f"/{stream}/", "/{stream}/")


def test_a_leg_from_one_index_for_every_gpu_installs_a_device_wheel_per_target_and_builds(
    http_server: LocalServer, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    root = tmp_path_factory.mktemp("whl-next")
    sets = {v: make_therock_wheels(root / v, v, FAMILY, TARGETS) for v in UPLOADS}
    index_url = serve_wheel_index(
        http_server, [(sets[v], t) for v, t in UPLOADS.items()], family=None, base="/nightly/whl-next/"
    )
    ws = workspace(tmp_path, _stream_template(index_url, "nightly"))
    resolved = run_pipeline(
        ["--matrix", str(ws / "matrix.toml"), "resolve", "--leg", LEG, "--now", NOW, "--json"]
    )
    assert resolved.returncode == 0, resolved.stderr
    answer = json.loads(resolved.stdout)
    assert answer["file"] == f"{DEVICE_SELECTOR}=={VERSION}" and answer["index_url"] == index_url
    record = build_leg(ws, LEG, tmp_path / "ccache", "--now", NOW)
    details = record["toolchain"]["details"]
    listed = dict(item.split("#sha256=") for item in details["wheels"].split())
    # The eight files of the build: the selector, core, devel, the shared libraries and a device wheel per target.
    assert listed == {p.name: sha256_of(p) for p in sets[VERSION].values()} and len(listed) == 4 + len(
        TARGETS
    )
    libraries = (
        Path(details["install_root"]) / "site-packages" / "_rocm_sdk_libraries" / "lib/rocblas/library"
    )
    assert sorted(p.name for p in libraries.iterdir()) == [f"TensileLibrary_{t}.dat" for t in TARGETS]
    assert (record["ccache"]["hits"], record["ccache"]["misses"]) == (0, COMPILATIONS)


def test_the_stable_policy_reads_the_stable_streams_index_and_a_missing_target_names_those_it_has(
    http_server: LocalServer, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    root = tmp_path_factory.mktemp("whl-next-index")
    nightly = make_index_only_wheels(root / "nightly", VERSION, FAMILY, TARGETS)
    stable = make_index_only_wheels(root / "stable", "7.14.0", FAMILY, TARGETS)
    serve_wheel_index(http_server, [(nightly, UPLOADS[VERSION])], family=None, base="/nightly/whl-next/")
    stable_url = serve_wheel_index(
        http_server, [(stable, UPLOADS[OLDER])], family=None, base="/stable/whl-next/"
    )
    ws = workspace(tmp_path, _stream_template(stable_url, "stable"))
    args = ["--matrix", str(ws / "matrix.toml"), "resolve", "--leg", LEG, "--now", NOW, "--json"]
    proc = run_pipeline([*args, "--rocm-version", "stable"])
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert (answer["version"], answer["index_url"]) == ("7.14.0", stable_url)
    assert answer["file"] == f"{DEVICE_SELECTOR}==7.14.0"

    partial = make_index_only_wheels(root / "partial", VERSION, FAMILY, TARGETS[:3])
    serve_wheel_index(http_server, [(partial, UPLOADS[VERSION])], family=None, base="/partial/whl-next/")
    (ws / "matrix.toml").write_text(
        (ws / "matrix.toml").read_text().replace("/{stream}/whl-next/", "/partial/whl-next/")
    )
    missing = run_pipeline(args)
    out = missing.stdout + missing.stderr
    assert missing.returncode == 6, out
    assert "has no device wheels for gfx1103; it has them for: gfx1100, gfx1101, gfx1102" in out, out
    assert "Traceback" not in out
