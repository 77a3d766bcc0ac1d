"""MSVC on Windows legs: command lines, and the capture parsed from recorded ``set`` outputs."""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

import pytest

from pipeline.errors import ToolchainError
from pipeline.toolchain.msvc_env import (
    ENV_MARKER,
    default_vswhere,
    env_diff,
    layer_path_lists,
    msvc_env,
    parse_set_output,
    parse_vswhere,
    split_vcvars_output,
    vcvars_command_line,
    vcvarsall_path,
    vswhere_command,
)

DATA = Path(__file__).parent / "data" / "msvc"
VS = r"C:\Program Files\Microsoft Visual Studio\2022\Enterprise"
TOOLS = VS + r"\VC\Tools\MSVC\14.44.35207"


def recorded(name: str) -> str:
    # newline="" keeps the CRLF that cmd writes.
    with (DATA / name).open(encoding="utf-8", newline="") as fh:
        return fh.read()


def test_vswhere_command_line() -> None:
    vswhere = default_vswhere({"PROGRAMFILES(X86)": r"C:\Program Files (x86)"})
    assert str(vswhere) == r"C:\Program Files (x86)\Microsoft Visual Studio\Installer\vswhere.exe"
    assert vswhere_command(vswhere) == [
        r"C:\Program Files (x86)\Microsoft Visual Studio\Installer\vswhere.exe",
        "-latest", "-products", "*", "-requires", "Microsoft.VisualStudio.Component.VC.Tools.x86.x64",
        "-property", "installationPath", "-utf8", "-nologo",
    ]  # fmt: skip


def test_vswhere_answer_names_the_installation_and_vcvarsall() -> None:
    installation = parse_vswhere(recorded("vswhere-latest.txt"))
    assert installation == PureWindowsPath(VS)
    assert str(vcvarsall_path(installation)) == VS + r"\VC\Auxiliary\Build\vcvarsall.bat"


def test_vswhere_finding_nothing_is_a_clear_error() -> None:
    with pytest.raises(
        ToolchainError, match=r"vswhere found no Visual Studio with Microsoft\.VisualStudio\.Component\.VC"
    ):
        parse_vswhere("\r\n")


def test_vcvars_command_line_quotes_the_path_for_cmd_s() -> None:
    line = vcvars_command_line(vcvarsall_path(VS), "x64")
    assert line == (
        f'cmd.exe /d /s /c ""{VS}\\VC\\Auxiliary\\Build\\vcvarsall.bat" x64 && echo {ENV_MARKER} && set"'
    )
    with pytest.raises(ToolchainError, match="architecture 'x64 & calc'"):
        vcvars_command_line(vcvarsall_path(VS), "x64 & calc")


def test_set_output_parsing_keeps_equals_in_values_and_drops_hidden_entries() -> None:
    env = parse_set_output("=C:=C:\\a\r\nA=1=2\r\nPROMPT=$P$G\r\nnot a variable\r\n")
    assert env == {"A": "1=2", "PROMPT": "$P$G"}


def test_recorded_vcvarsall_capture() -> None:
    before = parse_set_output(recorded("set-before.txt"))
    banner, after = split_vcvars_output(recorded("vcvarsall-x64.txt"))
    assert "Environment initialized for: 'x64'" in banner
    msvc = msvc_env(before, after, VS, banner)
    assert (msvc.tools_version, msvc.vs_version, msvc.sdk_version) == ("14.44.35207", "17.0", "10.0.26100.0")
    assert msvc.identity == "msvc-14.44.35207"
    changed = msvc.changed
    # What a link needs is there; what vcvarsall left alone is not.
    assert changed["INCLUDE"].startswith(TOOLS + r"\include;")
    assert changed["LIB"].startswith(TOOLS + r"\lib\x64;")
    assert "LIBPATH" in changed and changed["VSCMD_ARG_TGT_ARCH"] == "x64"
    assert changed["Path"].startswith(TOOLS + r"\bin\HostX64\x64;")
    assert changed["Path"].endswith(before["Path"])
    for untouched in ("ComSpec", "PROMPT", "GITHUB_ACTIONS", "ProgramFiles(x86)", "TEMP"):
        assert untouched not in changed
    assert not any(name.startswith("=") for name in changed)


def test_a_refused_architecture_names_vcvarsalls_error() -> None:
    with pytest.raises(
        ToolchainError, match=r"vcvarsall.bat failed: \[ERROR:vcvarsall.bat\] Invalid argument found : x65"
    ):
        split_vcvars_output(recorded("vcvarsall-bad-arch.txt"))


def test_an_environment_without_a_toolset_version_is_refused() -> None:
    before = parse_set_output(recorded("set-before.txt"))
    with pytest.raises(ToolchainError, match="set no MSVC toolset version: VCToolsVersion is not set"):
        msvc_env(before, before, VS)


def test_env_diff_ignores_the_case_of_names() -> None:
    assert env_diff({"Path": "a"}, {"PATH": "a", "LIB": "x"}) == {"LIB": "x"}


def test_rocm_folders_stay_in_front_of_msvc_on_path() -> None:
    before = parse_set_output(recorded("set-before.txt"))
    _, after = split_vcvars_output(recorded("vcvarsall-x64.txt"))
    msvc = msvc_env(before, after, VS)
    rocm = {"HIP_PATH": r"C:\tc\rocm", "PATH": r"C:\tc\rocm\bin;C:\tc\rocm\lib\llvm\bin;" + before["Path"]}
    merged = layer_path_lists(before, msvc.changed, rocm)
    path = merged["PATH"]
    assert path.startswith(r"C:\tc\rocm\bin;C:\tc\rocm\lib\llvm\bin;" + TOOLS + r"\bin\HostX64\x64;")
    assert path.endswith(before["Path"]) and path.count(r"C:\Windows\system32") == 1
    # One spelling of PATH only (cmd's "Path" replaced), and MSVC's other variables kept.
    assert "Path" not in merged
    assert merged["HIP_PATH"] == r"C:\tc\rocm" and merged["INCLUDE"] == msvc.changed["INCLUDE"]


def test_msvc_version_goes_into_the_toolchain_identity() -> None:
    from pipeline.toolchain.msvc import with_msvc
    from pipeline.toolchain.toolchain import Toolchain

    before = parse_set_output(recorded("set-before.txt"))
    _, after = split_vcvars_output(recorded("vcvarsall-x64.txt"))
    rocm = Toolchain(kind="rocm", identity="rocm-10.1.0a20260807", details={"version": "10.1.0a20260807"},
                     env={"PATH": r"C:\tc\bin;" + before["Path"]})  # fmt: skip
    tc = with_msvc(rocm, msvc_env(before, after, VS), before)
    assert tc.identity == "rocm-10.1.0a20260807-msvc-14.44.35207"
    assert tc.compilers["MSVC"] == f"MSVC 14.44.35207 ({VS})"
    assert tc.details["msvc"] == "14.44.35207" and tc.details["version"] == "10.1.0a20260807"
    assert tc.env["PATH"].startswith(r"C:\tc\bin;" + TOOLS)
