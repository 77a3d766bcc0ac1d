"""The smoke run leaves nothing behind and holds only a bounded part of what a program prints.

The programs are real ELF files built here with gcc: one whose child calls
``setsid()`` and forks a daemon (out of the program's process group and
session), one that prints 2 GiB. Whether the daemon still runs is read from
/proc; the memory bound is the kernel's (``RLIMIT_AS`` on the process that
runs the check).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.bundle.smoke import run_version
from tests.support.pipeline_cli import ROOT

pytestmark = pytest.mark.integration

DAEMON = r"""
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    pid_t child = fork();
    if (child == 0) {
        setsid();                      /* a new session: out of the program's group */
        if (fork() == 0) {             /* the daemon: its parent exits, it is orphaned */
            FILE *f = fopen("daemon.pid", "w");  /* in the working folder: the smoke run's home */
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
            for (;;) pause();
        }
        _exit(0);
    }
    waitpid(child, NULL, 0);
    for (int i = 0; i < 200 && access("daemon.pid", F_OK) != 0; i++) usleep(10000);
    printf("version: 1 (abc)\n");
    return 0;
}
"""

# 2 GiB on stderr, a first and a last line that say which end they are, then exit 3 (no usage text).
FLOOD = r"""
#include <string.h>
#include <unistd.h>
int main(void) {
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    block[sizeof block - 1] = '\n';
    write(2, "first line\n", 11);
    for (int i = 0; i < 2048; i++) {
        for (size_t done = 0; done < sizeof block; ) {
            ssize_t n = write(2, block + done, sizeof block - done);
            if (n <= 0) return 9;
            done += (size_t)n;
        }
    }
    write(2, "last line\n", 10);
    return 3;
}
"""


def build(tmp_path: Path, name: str, source: str) -> Path:
    root = tmp_path / "bundle"
    root.mkdir(exist_ok=True)
    (tmp_path / f"{name}.c").write_text(source)
    subprocess.run(["gcc", "-O1", "-o", str(root / name), str(tmp_path / f"{name}.c")], check=True)
    return root


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the subreaper is Linux's (PR_SET_CHILD_SUBREAPER)"
)
def test_a_daemon_that_left_the_programs_session_is_stopped_too(tmp_path: Path) -> None:
    root = build(tmp_path, "llama-cli", DAEMON)
    home = tmp_path / "home"
    run = run_version(root, "llama-cli", home)
    assert (run.exit_code, run.output, run.ok) == (0, "version: 1 (abc)", True)
    daemon = int((home / "daemon.pid").read_text())
    if alive(daemon):
        os.kill(daemon, signal.SIGKILL)
        pytest.fail(f"the daemon {daemon} the program started outlived the smoke run")
    # Nor is it a zombie left to this process: it was reaped.
    assert not Path(f"/proc/{daemon}").exists()


@pytest.mark.skipif(
    not Path("/proc/self/task", str(os.getpid()), "children").exists(),
    reason="the kernel lists no children per thread (CONFIG_PROC_CHILDREN)",
)
def test_the_containment_reads_its_own_children_lists_never_every_process_of_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three looks per smoke program: each a few reads of this process's own files, not one read per
    process of the machine; the daemon is still caught."""
    from pipeline.processes import groups

    looks: list[str] = []
    listed = groups._listed_children
    monkeypatch.setattr(groups, "_listed_children", lambda: (looks.append("listed"), listed())[1])
    monkeypatch.setattr(groups, "_scanned_children", lambda: pytest.fail("every process of /proc was read"))
    root = build(tmp_path, "llama-cli", DAEMON)
    home = tmp_path / "home"
    assert run_version(root, "llama-cli", home).exit_code == 0
    daemon = int((home / "daemon.pid").read_text())
    if alive(daemon):
        os.kill(daemon, signal.SIGKILL)
        pytest.fail(f"the daemon {daemon} the program started outlived the smoke run")
    # Before, after the program, and the last look on leaving (each round that killed something looks again).
    assert len(looks) >= 3


def test_two_gib_of_output_are_read_with_a_bounded_memory_and_a_non_zero_exit_is_not_started(
    tmp_path: Path,
) -> None:
    root = build(tmp_path, "llama-flood", FLOOD)
    limit = 1 << 30  # 1 GiB of address space for the whole checking process: half the output

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from pipeline.bundle.smoke import run_version, versions_check\n"
        "run = run_version(Path(sys.argv[1]), 'llama-flood', Path(sys.argv[2]))\n"
        "print(json.dumps({'exit': run.exit_code, 'ok': run.ok, 'head': run.output[:11],"
        " 'line': versions_check([run]).line[:160], 'size': len(run.output)}))\n"
    )
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code, str(root), str(tmp_path / "home")], capture_output=True,
                          text=True, timeout=600, preexec_fn=cap, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout)
    assert found["exit"] == 3 and found["ok"] is False
    assert found["head"] == "first line\n"
    assert found["line"].startswith(
        "versions: llama-flood --version exited 3 without printing a usage text (no sign it started): "
    ), found
    print(f"2 GiB read in {time.monotonic() - started:.1f} s", file=sys.stderr)
