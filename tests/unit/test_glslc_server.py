"""The glslc cache server's exchange with its compiled launcher (pipeline/ccache/glslc_server.py), no socket."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.ccache import glslc_cache as gc
from pipeline.ccache import glslc_server as gs
from pipeline.ccache.glslc_client import client_key, client_source
from pipeline.ccache.glslc_session import cmake_path, glslc_of


def test_a_request_reads_back_as_sent() -> None:
    request = gs.Request(
        cwd="/w/build",
        argv=["-o", "a b.spv", "", "in.comp", "-DX=é"],
        env={"PATH": "/usr/bin", "EMPTY": "", "EQ": "a=b"},
    )
    assert gs.parse_request(gs.encode_request(request)) == request


def test_the_first_of_a_repeated_environment_name_wins_and_an_entry_without_a_name_is_dropped() -> None:
    data = gs.encode_request(gs.Request(cwd="/w", argv=[], env={})).removesuffix(b"0\0")
    data += b"4\0A=1\0A=2\0=x\0NOEQUALS\0"
    assert gs.parse_request(data) == gs.Request(cwd="/w", argv=[], env={"A": "1"})


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"glslc-cache-request-1\0/w\x000\x000",  # no final NUL
        b"glslc-cache-request-0\0/w\x000\x000\0",  # another protocol
        b"glslc-cache-request-1\0relative\x000\x000\0",
        b"glslc-cache-request-1\0/w\x002\0only-one\0",
        b"glslc-cache-request-1\0/w\x001\0arg\x002\0A=1\0",
        b"glslc-cache-request-1\0/w\0-1\x000\0",
        b"glslc-cache-request-1\0/w\0\xd9\xa3\x000\0",  # a non-ASCII digit
    ],
)
def test_a_malformed_request_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        gs.parse_request(data)


def test_replies_as_the_client_reads_them() -> None:
    assert gs.encode_reply(gc.Reply(2, b"out", b"err:1\n")) == b"R 2 3 6\nouterr:1\n"
    assert gs.encode_reply(gc.Reply(0)) == b"R 0 0 0\n"
    assert gs.encode_reply(gc.Reply(exec_glslc="/usr/bin/glslc")) == b"X /usr/bin/glslc"


def _config(tmp_path: Path) -> dict[str, str]:
    return {
        "glslc": "/usr/bin/glslc",
        "identity": "glslc-1",
        "cache_dir": str(tmp_path / "cache"),
        "base_dir": str(tmp_path),
        "stats": str(tmp_path / "stats.log"),
    }


def test_an_unreadable_request_is_handed_back_and_an_uncacheable_call_goes_to_glslc(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert gs.answer(config, b"nonsense") == gs.FALLBACK
    request = gs.Request(cwd=str(tmp_path), argv=["in.comp", "-o", "-"], env={})
    assert gs.answer(config, gs.encode_request(request)) == b"X /usr/bin/glslc"
    # A cacheable call whose input cannot be read is not cached either.
    missing = gs.Request(cwd=str(tmp_path), argv=["gone.comp", "-o", "x.spv"], env={})
    assert gs.answer(config, gs.encode_request(missing)) == b"X /usr/bin/glslc"
    assert (tmp_path / "stats.log").read_text().split() == ["uncacheable", "uncacheable"]


def test_a_hit_is_answered_from_the_cache_and_writes_the_output_and_depfile(tmp_path: Path) -> None:
    config = _config(tmp_path)
    (tmp_path / "in.comp").write_text("void main() {}\n")
    (tmp_path / "inc.glsl").write_text("// inc\n")
    argv = ["in.comp", "-o", "out.spv", "-MD", "-MF", "out.d"]
    inv = gc.parse_invocation(argv)
    assert inv is not None
    primary = gc.primary_key("glslc-1", inv, tmp_path, tmp_path, gc.file_digest(tmp_path / "in.comp") or "")
    gc.Cache(config["cache_dir"]).store(
        primary, [("./inc.glsl", gc.file_digest(tmp_path / "inc.glsl") or "")], b"SPIRV", b"a warning\n"
    )
    reply = gs.answer(config, gs.encode_request(gs.Request(cwd=str(tmp_path), argv=argv, env={})))
    assert reply == b"R 0 0 10\na warning\n"
    assert (tmp_path / "out.spv").read_bytes() == b"SPIRV"
    assert (tmp_path / "out.d").read_text() == f"out.spv: {tmp_path}/in.comp {tmp_path}/inc.glsl\n"
    assert (tmp_path / "stats.log").read_text().split() == ["hit"]


def test_a_fault_inside_the_cache_is_handed_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    del config["stats"]
    request = gs.Request(cwd=str(tmp_path), argv=["in.comp", "-o", "x.spv"], env={})
    assert gs.answer(config, gs.encode_request(request)) == gs.FALLBACK
    assert "KeyError: 'stats'" in capsys.readouterr().err


def test_the_compiled_launcher_is_kept_per_source_and_machine() -> None:
    source = client_source()
    assert gs.PROTOCOL.encode() in source
    assert client_key(source, "Linux-x86_64") != client_key(source, "Linux-aarch64")
    assert client_key(source, "Linux-x86_64") != client_key(source + b"\n", "Linux-x86_64")


def test_the_c_compiler_and_glslc_are_read_from_the_toolchain_s_cmake_arguments() -> None:
    args = [
        "-DCMAKE_C_COMPILER=/usr/bin/gcc",
        "-DVulkan_GLSLC_EXECUTABLE:FILEPATH=/a/glslc",
        "-DCMAKE_C_COMPILER:FILEPATH=/opt/cc",
        "-DCMAKE_C_COMPILER_LAUNCHER=ccache",
    ]
    assert cmake_path(args, "CMAKE_C_COMPILER") == Path("/opt/cc")
    assert glslc_of(args) == Path("/a/glslc")
    assert cmake_path(["-DCMAKE_CXX_COMPILER=/usr/bin/g++"], "CMAKE_C_COMPILER") is None
