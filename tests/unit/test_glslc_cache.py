"""The glslc cache's key, manifest and call parsing (pipeline/ccache/glslc_cache.py), without glslc."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.ccache import glslc_cache as gc
from pipeline.ccache.glslc_session import glslc_of, launcher_text

# The call llama.cpp's vulkan-shaders-gen makes (vulkan-shaders-gen.cpp, string_to_spv_func), in a workspace W.
SHADERS = "src/llama.cpp/ggml/src/ggml-vulkan/vulkan-shaders"
SPV = "build/ggml/src/ggml-vulkan/vulkan-shaders.spv"


def _call(ws: Path, *, variant: str = "A_TYPE=float") -> list[str]:
    return ["-fshader-stage=compute", "--target-env=vulkan1.2", f"{ws}/{SHADERS}/mul_mm.comp",
            "-o", f"{ws}/{SPV}/matmul_f32.spv", "-O", "-MD", "-MF", f"{ws}/build/mul_mm.comp.cpp.d",
            f"-D{variant}"]  # fmt: skip


def _key(ws: Path, argv: list[str], digest: str = "d" * 64, identity: str = "glslc-1") -> str:
    inv = gc.parse_invocation(argv)
    assert inv is not None
    return gc.primary_key(identity, inv, ws, ws / "build", digest)


def test_the_vulkan_shaders_gen_call_is_read_as_one_input_one_output_and_its_depfile() -> None:
    ws = Path("/w")
    inv = gc.parse_invocation(_call(ws))
    assert inv == gc.Invocation(
        input=f"/w/{SHADERS}/mul_mm.comp",
        output=f"/w/{SPV}/matmul_f32.spv",
        depfile="/w/build/mul_mm.comp.cpp.d",
        args=("-fshader-stage=compute", "--target-env=vulkan1.2", "-O", "-DA_TYPE=float"),
    )
    # -MD alone: glslc's own default name. Whether a depfile is asked for is not an argument of the key:
    # it changes nothing in the SPIR-V.
    assert gc.parse_invocation(["in.comp", "-o", "x.spv", "-MD"]) == gc.Invocation(
        input="in.comp", output="x.spv", depfile="x.spv.d", args=()
    )


@pytest.mark.parametrize(
    "argv",
    [
        # CMake's configure-time extension checks (ggml-vulkan's CMakeLists.txt): SPIR-V to stdout.
        ["-o", "-", "-fshader-stage=compute", "--target-env=vulkan1.3", "/t/test.comp"],
        ["a.comp", "b.comp", "-o", "x.spv"],
        ["a.comp"],
        ["-E", "a.comp", "-o", "x.glsl"],
        ["--version"],
        ["a.comp", "-o"],
        ["a.comp", "-o", "x.spv", "-MF", "x.d"],
    ],
)
def test_calls_the_cache_does_not_understand_run_glslc_unchanged(argv: list[str]) -> None:
    assert gc.parse_invocation(argv) is None


def test_same_glslc_arguments_and_input_give_the_same_key_in_another_folder(tmp_path: Path) -> None:
    runner, laptop = Path("/home/runner/work/out/vulkan"), Path("/tmp/elsewhere/laptop/out/vulkan")
    assert _key(runner, _call(runner)) == _key(laptop, _call(laptop))
    # The key is a sha256 hex digest, the same however often it is computed.
    key = _key(runner, _call(runner))
    assert len(key) == 64 and int(key, 16) >= 0 and key == _key(runner, _call(runner))


@pytest.mark.parametrize("change", ["variant", "input", "glslc", "option", "input-path"])
def test_anything_the_output_depends_on_changes_the_key(change: str) -> None:
    ws = Path("/w")
    base = _key(ws, _call(ws))
    if change == "variant":
        other = _key(ws, _call(ws, variant="A_TYPE=float16_t"))
    elif change == "input":
        other = _key(ws, _call(ws), digest="e" * 64)
    elif change == "glslc":
        other = _key(ws, _call(ws), identity="glslc-2")
    elif change == "option":
        other = _key(ws, [a for a in _call(ws) if a != "-O"])
    else:
        other = _key(
            ws, [a.replace("mul_mm.comp", "mul_mmq.comp", 1) if a.endswith(".comp") else a for a in _call(ws)]
        )
    assert other != base


def test_output_and_depfile_paths_are_not_in_the_key() -> None:
    ws = Path("/w")
    moved = [
        a.replace("matmul_f32.spv", "renamed.spv").replace("mul_mm.comp.cpp.d", "x.d") for a in _call(ws)
    ]
    assert _key(ws, moved) == _key(ws, _call(ws))


def test_an_include_folder_under_the_workspace_is_keyed_relative_to_it() -> None:
    a, b = Path("/a/ws"), Path("/b/ws")
    assert _key(a, ["x.comp", "-o", "x.spv", "-I", "/a/ws/src/inc"]) == _key(
        b, ["x.comp", "-o", "x.spv", "-I", "/b/ws/src/inc"]
    )
    assert _key(a, ["x.comp", "-o", "x.spv", "-I/a/ws/src/inc"]) == _key(
        b, ["x.comp", "-o", "x.spv", "-I/b/ws/src/inc"]
    )
    assert _key(a, ["x.comp", "-o", "x.spv", "-I", "/a/ws/src/inc"]) != _key(
        a, ["x.comp", "-o", "x.spv", "-I", "/a/ws/src/other"]
    )


def _stored(tmp_path: Path, ws: Path) -> tuple[gc.Cache, str]:
    """A cache holding one result for ws's mul_mm.comp, which includes two files."""
    for name, text in {"mul_mm.comp": "main", "types.glsl": "types v1", "funcs.glsl": "funcs v1"}.items():
        (ws / SHADERS).mkdir(parents=True, exist_ok=True)
        (ws / SHADERS / name).write_text(text)
    cache = gc.Cache(tmp_path / "cache")
    includes = [
        (f"./{SHADERS}/{n}", gc.digest_bytes((ws / SHADERS / n).read_bytes()))
        for n in ("types.glsl", "funcs.glsl")
    ]
    primary = _key(ws, _call(ws), digest=gc.digest_bytes(b"main"))
    cache.store(primary, includes, b"\x03\x02\x23\x07spirv", b"")
    return cache, primary


def _lookup(cache: gc.Cache, ws: Path) -> str | None:
    primary = _key(ws, _call(ws), digest=gc.digest_bytes((ws / SHADERS / "mul_mm.comp").read_bytes()))
    return cache.lookup(primary, lambda p: gc.file_digest(gc.local(p, ws)))


def test_a_stored_result_is_found_from_another_folder_with_the_same_files(tmp_path: Path) -> None:
    cache, _ = _stored(tmp_path, tmp_path / "runner")
    laptop = tmp_path / "elsewhere" / "laptop"
    _stored(tmp_path / "other-cache", laptop)  # the same files, written in another folder
    key = _lookup(cache, laptop)
    assert key is not None
    assert (Path(cache.result_dir(key)) / "output").read_bytes() == b"\x03\x02\x23\x07spirv"


@pytest.mark.parametrize("changed", ["types.glsl", "funcs.glsl"])
def test_any_included_file_that_changed_is_a_miss(tmp_path: Path, changed: str) -> None:
    ws = tmp_path / "ws"
    cache, _ = _stored(tmp_path, ws)
    assert _lookup(cache, ws) is not None
    (ws / SHADERS / changed).write_text("v2")
    assert _lookup(cache, ws) is None
    (ws / SHADERS / changed).unlink()
    assert _lookup(cache, ws) is None


def test_a_result_stored_again_is_kept_once_and_the_manifest_stays_bounded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    cache, primary = _stored(tmp_path, ws)
    for n in range(gc.MANIFEST_ENTRIES + 3):
        cache.store(primary, [(f"./{SHADERS}/types.glsl", f"{n:064x}")], b"x", b"")
    cache.store(primary, [(f"./{SHADERS}/types.glsl", f"{0:064x}")], b"x", b"")
    entries = cache.manifest(primary)
    assert len(entries) == gc.MANIFEST_ENTRIES
    assert entries[0] == (
        gc.result_key(primary, [(f"./{SHADERS}/types.glsl", f"{0:064x}")]),
        [(f"./{SHADERS}/types.glsl", f"{0:064x}")],
    )
    # No temp folder or file is left beside the entries.
    assert not list(Path(cache.root).rglob(".*"))


def test_a_depfile_is_read_as_make_writes_it_and_written_back_the_same() -> None:
    text = "/w/out.spv: /w/a\\ b.comp /w/inc/x.glsl \\\n /w/inc/y.glsl\n"
    assert gc.parse_depfile(text) == ["/w/a b.comp", "/w/inc/x.glsl", "/w/inc/y.glsl"]
    written = gc.depfile_text("/w/out.spv", ["/w/a b.comp", Path("/w/inc/x.glsl")])
    assert written == "/w/out.spv: /w/a\\ b.comp /w/inc/x.glsl\n"
    assert gc.parse_depfile(written) == ["/w/a b.comp", "/w/inc/x.glsl"]
    assert gc.parse_depfile("no rule here\n") == []


def test_the_launchers_settings_read_back_as_written_and_a_tab_is_refused(tmp_path: Path) -> None:
    settings = {"glslc": "/usr/bin/glslc", "base_dir": "/w/Jürgen's $HOME"}
    text = gc.settings_text(settings)
    assert text == "glslc\t/usr/bin/glslc\nbase_dir\t/w/Jürgen's $HOME\n"
    (tmp_path / "settings").write_text(text, encoding="utf-8")
    assert gc.read_settings(str(tmp_path / "settings")) == settings
    with pytest.raises(ValueError):
        gc.settings_text({"base_dir": "/w/a\tb"})


def test_the_glslc_cmake_names_is_the_last_definition_and_the_launcher_quotes_paths() -> None:
    assert glslc_of(
        ["-DVulkan_GLSLC_EXECUTABLE=/a/glslc", "-DX=1", "-DVulkan_GLSLC_EXECUTABLE:FILEPATH=/b/glslc"]
    ) == Path("/b/glslc")
    assert glslc_of(["-DGGML_VULKAN=ON"]) is None
    text = launcher_text("/venv/bin/python", Path("/x/glslc_cache.py"), Path("/it's here/settings"))
    assert (
        text.splitlines()[-1]
        == "exec /venv/bin/python -I -S /x/glslc_cache.py '/it'\"'\"'s here/settings' \"$@\""
    )
