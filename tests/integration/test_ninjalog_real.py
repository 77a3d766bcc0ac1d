"""pipeline.results.ninjalog on logs written by a real Ninja build made here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.results import ninjalog

pytestmark = pytest.mark.integration

PY = sys.executable.replace("\\", "/")

# Object names shaped like CMake's so that classification is exercised for real.
BUILD_NINJA = f"""\
rule gen
  command = "{PY}" -c "open('$out', 'w').write('#define X 1\\n')"
rule cc
  command = "{PY}" -c "open('$out', 'w').write('obj:$in')"
rule twice
  command = "{PY}" -c "[open(p, 'w').write('x') for p in '$out'.split()]"
rule link
  command = "{PY}" -c "open('$out', 'w').write('bin')"
build gen/config.h: gen
build obj/main.cpp.o: cc gen/config.h
build obj/util.c.o: cc gen/config.h
build obj/kernel.cu.o: cc gen/config.h
build bin/libkern.so bin/libkern.lib: twice obj/kernel.cu.o
build bin/app: link obj/main.cpp.o obj/util.c.o bin/libkern.so
default bin/app
"""


def ninja() -> str:
    found = shutil.which("ninja")
    assert found, "ninja is not on PATH: install the project's dependencies (pip install .)"
    return found


def run_ninja(build: Path) -> None:
    subprocess.run([ninja(), "-C", str(build)], check=True, capture_output=True, text=True)


@pytest.fixture
def built(tmp_path: Path) -> Path:
    build = tmp_path / "build"
    build.mkdir()
    (build / "build.ninja").write_text(BUILD_NINJA)
    run_ninja(build)
    return build


def test_real_log_is_parsed_and_classified(built: Path) -> None:
    log = ninjalog.read_log(built / ".ninja_log")
    assert log.version in ninjalog.SUPPORTED_VERSIONS
    by_name = {s.name: s for s in log.steps}
    assert set(by_name) == {
        "gen/config.h",
        "obj/main.cpp.o",
        "obj/util.c.o",
        "obj/kernel.cu.o",
        "bin/libkern.so",
        "bin/app",
    }
    # The multi-output edge wrote two lines and is one step.
    assert by_name["bin/libkern.so"].outputs == ("bin/libkern.so", "bin/libkern.lib")
    assert by_name["obj/kernel.cu.o"].kind == "device"
    assert by_name["obj/main.cpp.o"].kind == "host"
    assert by_name["bin/app"].kind == "link"
    assert by_name["gen/config.h"].kind == "other"
    # Dependencies ran in order on the real clock.
    assert by_name["gen/config.h"].end_ms <= by_name["obj/main.cpp.o"].start_ms
    assert by_name["bin/libkern.so"].end_ms <= by_name["bin/app"].start_ms

    summary = ninjalog.summarize(log)
    assert summary["steps"] == 6
    assert {k: v["count"] for k, v in summary["classes"].items()} == {
        "device": 1,
        "host": 2,
        "link": 2,
        "other": 1,
    }
    chain = [s["output"] for s in summary["critical_path"]["chain"]]
    assert chain[0] == "gen/config.h"
    assert chain[-1] == "bin/app"


def test_rebuild_appends_and_only_the_last_build_counts(built: Path) -> None:
    first_lines = (built / ".ninja_log").read_text().count("\n")
    (built / "obj/util.c.o").unlink()
    run_ninja(built)
    text = (built / ".ninja_log").read_text()
    assert text.count("\n") > first_lines, "Ninja should have appended the second build"
    log = ninjalog.parse_log(text)
    assert log.steps[0].name == "obj/util.c.o"
    assert "gen/config.h" not in {s.name for s in log.steps}


def test_timings_command_prints_json_and_writes_a_trace(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "trace.json"
    assert main(["timings", str(built), "--json", "--trace", str(trace)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == ninjalog.timings_for_build(built)
    events = json.loads(trace.read_text())["traceEvents"]
    assert sorted(e["name"] for e in events if e["ph"] == "X") == sorted(
        ["gen/config.h", "obj/main.cpp.o", "obj/util.c.o", "obj/kernel.cu.o", "bin/libkern.so", "bin/app"]
    )


def test_timings_command_console_output(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["timings", str(built)]) == 0
    out = capsys.readouterr().out
    assert "device" in out and "Critical path: " in out and "bin/app" in out


def test_timings_command_without_a_log_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert main(["timings", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and ".ninja_log: no Ninja log" in err
    assert "\n" not in err
