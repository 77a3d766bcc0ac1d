"""The smoke run's pure parts: the tokenizer test pair, the ids and device lines, backend modules, the tiny model."""

from __future__ import annotations

from pathlib import Path

from pipeline.bundle.smoke import (
    SKIPPED,
    _ids,
    _listed_devices,
    backend_modules,
    forward_pass_check,
    tokenizer_check,
    vocab_test_case,
)

SEP = "\n__ggml_vocab_test__\n"


def test_the_first_plain_sentence_of_a_tokenizer_pair_and_its_ids() -> None:
    # The format of llama.cpp's models/ggml-vocab-*.gguf.inp/.out (tests/test-tokenizer-0.cpp).
    inp = SEP.join(["ied 4 ½ months", "Hello", " ", "Hello world", "Hello World"])
    out = " 474 287 29871\n 15043\n 259\n 15043 3186\n 15043 2787\n"
    assert vocab_test_case(inp, out) == ("Hello world", [15043, 3186])
    assert vocab_test_case(SEP.join(["a", "1 2"]), "1\n2\n") is None


def test_the_ids_line_of_llama_tokenize() -> None:
    assert _ids("some log\n[15043, 3186]\n") == [15043, 3186]
    assert _ids("[]\n") == []
    assert _ids("no list here\n") is None


def test_the_devices_of_list_devices() -> None:
    assert _listed_devices("Available devices:\n  (none)\n") == []
    text = "Available devices:\n  ROCm0: AMD Radeon (24560 MiB, 24000 MiB free)\n  Vulkan0: x (1 MiB, 1 MiB free)\nbye\n"
    assert _listed_devices(text) == ["ROCm0", "Vulkan0"]
    assert _listed_devices("nothing listed\n") == []


def test_backend_modules_by_backend(tmp_path: Path) -> None:
    for name in (
        "libggml-base.so",
        "libggml.so",
        "libggml-cpu-haswell.so",
        "libggml-cpu-x64.so",
        "libggml-hip.so",
        "libggml-rpc.so",
        "libllama.so",
        "libggml-cpu-haswell.so.0",
        "llama-cli",
    ):
        (tmp_path / name).write_bytes(b"x")
    assert backend_modules(tmp_path, "linux") == {
        "cpu": ["libggml-cpu-haswell.so", "libggml-cpu-x64.so"],
        "hip": ["libggml-hip.so"],
        "rpc": ["libggml-rpc.so"],
    }
    win = tmp_path / "win"
    win.mkdir()
    for name in ("ggml-base.dll", "ggml-cpu-alderlake.dll", "ggml-hip.dll", "llama.dll"):
        (win / name).write_bytes(b"MZ")
    assert backend_modules(win, "windows") == {"cpu": ["ggml-cpu-alderlake.dll"], "hip": ["ggml-hip.dll"]}


def test_checks_without_their_program_or_input_say_why(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    root.mkdir()
    home = tmp_path / "home"
    assert (
        tokenizer_check(root, "linux", home, tmp_path / "models").line
        == "tokenizer: skipped: no llama-tokenize in the bundle"
    )
    (root / "llama-tokenize").write_bytes(b"\x7fELF")
    skipped = tokenizer_check(root, "linux", home, None)
    assert (skipped.status, skipped.line) == (
        SKIPPED,
        "tokenizer: skipped: no llama.cpp source tree given for its models/ vocab",
    )
    assert tokenizer_check(root, "linux", home, tmp_path / "models").line == (
        "tokenizer: skipped: the source tree has no models/ggml-vocab-llama-spm.gguf with its .inp/.out pair"
    )
    assert (
        forward_pass_check(root, "windows", home).line
        == "forward-pass: skipped: no llama-simple in the bundle"
    )


def test_the_tiny_model_is_the_same_bytes_every_time_and_reads_back_as_llama(tmp_path: Path) -> None:
    import gguf

    from pipeline.bundle.tiny_model import N_LAYER, write_tiny_llama

    first = write_tiny_llama(tmp_path / "a.gguf").read_bytes()
    assert first == write_tiny_llama(tmp_path / "b.gguf").read_bytes()
    reader = gguf.GGUFReader(tmp_path / "a.gguf")
    arch = reader.fields["general.architecture"]
    assert bytes(arch.parts[arch.data[0]]).decode() == "llama"
    names = {t.name for t in reader.tensors}
    assert {"token_embd.weight", "output.weight", f"blk.{N_LAYER - 1}.ffn_down.weight"} <= names
    assert len(names) == 3 + 9 * N_LAYER


def test_a_backend_dl_build_with_the_cpu_on_expects_a_cpu_module() -> None:
    from pipeline.bundle.smoke import expects_cpu_module

    assert expects_cpu_module(
        ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON"]
    )
    assert expects_cpu_module(["-DGGML_BACKEND_DL:BOOL=on"])
    assert not expects_cpu_module(["-DGGML_BACKEND_DL=ON", "-DGGML_CPU=OFF"])  # upstream's Windows GPU zips
    assert not expects_cpu_module(
        ["-DGGML_BACKEND_DL=ON", "-DGGML_BACKEND_DL=OFF"]
    )  # the last one wins, as in CMake
    assert not expects_cpu_module([])


def test_a_program_started_when_it_ran_even_without_a_version_flag() -> None:
    from pipeline.bundle.smoke import SmokeRun, versions_check

    runs = [
        SmokeRun(program="llama-cli", exit_code=0, output="version: 1 (abc)"),
        # upstream's llama-simple: no --version, its usage and exit 1
        SmokeRun(
            program="llama-simple", exit_code=1, output="example usage:\n    llama-simple -m model.gguf"
        ),
    ]
    assert all(r.ok for r in runs)
    assert (
        versions_check(runs).line
        == "versions: 1/2 programs printed their version; llama-simple started but take no --version"
    )
    not_started = [
        SmokeRun(program="a", exit_code=127, output="a: error while loading shared libraries: libx.so.1"),
        SmokeRun(program="b", exit_code=1, output="b: error while loading shared libraries: liby.so"),
        SmokeRun(program="c.exe", exit_code=0xC0000135, output=""),  # STATUS_DLL_NOT_FOUND
        SmokeRun(program="d", exit_code=-11, output=""),  # SIGSEGV
    ]
    assert not any(r.ok for r in not_started)
    check = versions_check(not_started)
    assert (check.status, check.line) == (
        "failed",
        "versions: a --version exited 127: a: error while loading shared libraries: libx.so.1 (and 3 more)",
    )


def test_a_non_zero_exit_counts_as_started_only_with_a_usage_text() -> None:
    from pipeline.bundle.smoke import SmokeRun, versions_check

    quiet_failure = SmokeRun(
        program="llama-x", exit_code=3, output="main: loading model\nsomething went wrong"
    )
    assert not quiet_failure.ok
    assert versions_check([quiet_failure]).line == (
        "versions: llama-x --version exited 3 without printing a usage text (no sign it started): something went wrong"
    )
    # The usage text may come after the 400 characters kept as output: the run says it saw one.
    assert SmokeRun(program="llama-y", exit_code=1, output="log " * 200, usage=True).ok
    assert SmokeRun(program="llama-z", exit_code=2, output="usage: llama-z [options]").ok
