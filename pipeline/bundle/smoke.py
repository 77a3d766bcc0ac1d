"""The smoke run: does the unpacked bundle work, not only start? Each check on a scrubbed environment.

Scrubbed: no ``LD_LIBRARY_PATH`` (nor any variable of the build), a PATH of
the system folders only (so no toolchain), ``HOME`` in a folder of its own,
which is also the working folder (ggml looks for backends beside the program
and in the working folder: only the bundle's own must count). A program that
works there finds its libraries through the bundle alone. The checks, each
one line in the check's result:

- ``versions``: each main program's ``--version`` runs;
- ``backends``: every ggml backend module the bundle ships
  (``GGML_BACKEND_DL``) loads: the CPU one, and a GPU one without a GPU,
  which then reports no device (``--list-devices``); a module that does not
  load (a library it needs is missing) fails;
- ``tokenizer``: ``llama-tokenize`` turns a sentence into the token ids that
  llama.cpp's own tokenizer test expects, with a vocab-only GGUF of the
  source tree's ``models/`` and its ``.inp``/``.out`` pair;
- ``forward-pass``: a program generates tokens with a tiny random-weight
  llama model (:mod:`pipeline.bundle.tiny_model`) on the CPU (``-ngl 0``),
  so the backend variant the machine picks actually computes;
- ``gpu-forward-pass`` (a bundle with a GPU module): the same with every
  layer offloaded; it passes naming the device it ran on (a GPU, or
  lavapipe, Mesa's software Vulkan driver), and is skipped saying "no
  <backend> device" on a machine without one (:mod:`pipeline.bundle.gpu_smoke`).

The GPU driver is the machine's: the Vulkan loader's driver selection
(``VK_ICD_FILENAMES`` and its kin, :data:`pipeline.names.VULKAN_DRIVER_VARIABLES`)
is passed through to every run when the check's environment sets it.

A check whose program (or input) the bundle does not have is skipped with
its reason, never silently. GPU legs pass without a GPU: their programs
compute on the CPU backend the bundle ships beside the GPU one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.bundle.elfdeps import is_elf
from pipeline.bundle.pedeps import is_pe
from pipeline.bundle.smoke_process import PROGRAM_PREFIX_ARGS, ProgramRun, run_program

PROGRAM_PREFIX = "llama-"
_OUTPUT_CHARS = 400

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
# Programs that take llama.cpp's common --list-devices, in the order they are tried
# (llama-tokenize too: a reduced build that ships no llama-cli still gets the check).
DEVICE_LISTERS = ("llama-cli", "llama-completion", "llama-bench", "llama-tokenize")
TOKENIZER = "llama-tokenize"
# llama-simple: one file, greedy sampling, prints how many tokens it decoded.
FORWARD_PROGRAM = "llama-simple"
FORWARD_TOKENS = 4
FORWARD_PROMPT = "Hello world"
# A small vocab of llama.cpp's models/ with its tokenizer test pair (.inp/.out), about 700 KB.
VOCAB = "ggml-vocab-llama-spm.gguf"
_VOCAB_TEST_SEPARATOR = "\n__ggml_vocab_test__\n"
# ggml's log line for each backend module it loaded (GGML_LOG_INFO, printed in Release builds too).
_LOADED = re.compile(r"loaded (?P<name>\S+) backend from (?P<path>.+?)\s*$", re.MULTILINE)
_DECODED = re.compile(r"decoded (?P<n>\d+) tokens")
# ggml-cuda's own lines when its module loads (ggml_cuda_init, GGML_LOG_INFO / GGML_LOG_ERROR).
_CUDA_FOUND = re.compile(r"ggml_cuda_init: found (?P<n>\d+) CUDA devices")
_CUDA_DEVICE = re.compile(r"^\s*Device \d+: ([^,\n]+), compute capability", re.MULTILINE)
_CUDA_FAILED = re.compile(r"ggml_cuda_init: failed to initialize CUDA: (?P<why>.*)$", re.MULTILINE)


# A program the loader could not start: 127/126 (a shell's words, and the loader's own exit code on a
# missing library), a Windows NTSTATUS error (0xC0000135: a DLL not found), or the loader's message.
_NOT_STARTED_CODES = (126, 127)
_NTSTATUS_ERROR = 0xC0000000
_LOADER_FAILURE = "error while loading shared libraries"


# A usage text: what a program that takes no --version prints when it started and refused the flag.
_USAGE = re.compile(r"\busage\b", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class SmokeRun:
    """One program's ``--version`` run: its exit code and the start of what it printed."""

    program: str
    exit_code: int
    output: str
    # Whether what it printed (all that was kept, not only ``output``) holds a usage text.
    usage: bool = False

    @property
    def printed_version(self) -> bool:
        return self.exit_code == 0

    @property
    def ok(self) -> bool:
        """It started: every library loaded and its main() ran. Some of upstream's programs
        (llama-simple, llama-gguf-hash...) take no --version and exit 1 with their usage; they pass.
        Any other non-zero exit is no proof it started, whatever it printed."""
        return self.exit_code == 0 or (
            self._could_have_started and (self.usage or bool(_USAGE.search(self.output)))
        )

    @property
    def _could_have_started(self) -> bool:
        return (
            0 < self.exit_code < _NTSTATUS_ERROR
            and self.exit_code not in _NOT_STARTED_CODES
            and _LOADER_FAILURE not in self.output
        )

    @property
    def failure(self) -> str:
        """Why it does not count as started, with the last line it printed ("" when it does)."""
        if self.ok:
            return ""
        tail = self.output.splitlines()[-1] if self.output else ""
        why = " without printing a usage text (no sign it started)" if self._could_have_started else ""
        return f"--version exited {self.exit_code}{why}: {tail}"

    def to_json(self) -> dict[str, object]:
        return {"program": self.program, "exit_code": self.exit_code, "output": self.output}


@dataclass(frozen=True, kw_only=True)
class SmokeCheck:
    """One check of the smoke run: passed, failed or skipped, said in one line."""

    name: str
    status: str
    line: str
    program: str | None = None

    @property
    def ok(self) -> bool:
        return self.status != FAILED

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "status": self.status, "line": self.line, "program": self.program}


def main_programs(root: Path, os_name: str) -> list[str]:
    """The bundle's main programs: ``llama-*`` executables at its root (``.exe`` on Windows), sorted."""
    if not root.is_dir():
        return []
    found = []
    for item in sorted(root.iterdir()):
        if not item.name.startswith(PROGRAM_PREFIX) or item.is_symlink() or item.is_dir():
            continue
        if os_name == "windows":
            if item.suffix.lower() == ".exe" and is_pe(item):
                found.append(item.name)
        elif os_name == "macos":
            from pipeline.bundle.machodeps import is_macho  # macholib: for a macOS bundle only

            if not item.name.endswith(".dylib") and is_macho(item):
                found.append(item.name)
        elif ".so" not in item.name and is_elf(item):
            found.append(item.name)
    return found


def program_file(name: str, os_name: str) -> str:
    """The file name of the program ``name`` on ``os_name``."""
    return f"{name}.exe" if os_name == "windows" else name


def backend_modules(root: Path, os_name: str) -> dict[str, list[str]]:
    """The ggml backend modules at the bundle's root, by backend name: ``{"cpu": [variants...], "hip": [...]}``.

    ``libggml-<name>[-<variant>].so`` (``ggml-<name>[-<variant>].dll``);
    ``ggml-base`` is the library every module links, not a backend.
    """
    suffix = {"windows": "dll", "macos": "dylib"}.get(os_name, "so")
    pattern = (
        re.compile(r"^ggml-([a-z0-9]+)(?:-[A-Za-z0-9_]+)?\.dll$", re.IGNORECASE)
        if os_name == "windows"
        else re.compile(rf"^libggml-([a-z0-9]+)(?:-[A-Za-z0-9_]+)?\.{suffix}$")
    )
    found: dict[str, list[str]] = {}
    for item in sorted(root.iterdir()) if root.is_dir() else ():
        match = pattern.match(item.name)
        if match and match.group(1).lower() != "base" and not item.is_dir():
            found.setdefault(match.group(1).lower(), []).append(item.name)
    return found


def run_version(
    root: Path, program: str, home: Path, driver_env: Mapping[str, str] | None = None
) -> SmokeRun:
    """Run ``<root>/<program> --version`` from ``home`` in the scrubbed environment."""
    ran = run_program(root, program, ["--version"], home, driver_env)
    return SmokeRun(
        program=program,
        exit_code=ran.exit_code,
        output=ran.text[:_OUTPUT_CHARS],
        usage=ran.exit_code != 0 and bool(_USAGE.search(ran.text)),
    )


def versions_check(runs: Sequence[SmokeRun]) -> SmokeCheck:
    """The ``--version`` runs as one check."""
    if not runs:
        return SmokeCheck(
            name="versions", status=SKIPPED, line="versions: skipped: no llama-* programs in the bundle"
        )
    bad = [r for r in runs if not r.ok]
    if bad:
        first = bad[0]
        return SmokeCheck(
            name="versions",
            status=FAILED,
            program=first.program,
            line=f"versions: {first.program} {first.failure}"
            + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""),
        )
    no_flag = [r.program for r in runs if not r.printed_version]
    others = f"; {', '.join(no_flag)} started but take no --version" if no_flag else ""
    return SmokeCheck(
        name="versions",
        status=PASSED,
        line=f"versions: {len(runs) - len(no_flag)}/{len(runs)} programs printed their version{others}",
    )


def _present(root: Path, names: Sequence[str], os_name: str) -> str | None:
    return next(
        (program_file(n, os_name) for n in names if (root / program_file(n, os_name)).is_file()), None
    )


def backends_check(
    root: Path,
    os_name: str,
    home: Path,
    *,
    backend_dl: bool = False,
    driver_env: Mapping[str, str] | None = None,
    driver: str | None = None,
    forward: ProgramRun | None = None,
) -> SmokeCheck:
    """Every backend module of the bundle loads (see the module docstring), and the devices it lists.

    Which modules loaded is read from ggml's own log in a ``llama-simple``
    run: it loads every module beside it (``ggml_backend_load_all``) and logs
    through llama.cpp's default logger, straight to stderr. ``--list-devices``
    cannot say it: it lists only the non-CPU devices, and the programs that
    take it log through llama.cpp's common log, whose queue is not flushed at
    exit (common/log.cpp leaks the logger on purpose), so its lines come or
    not. Its device list (stdout) is reliable and is reported.

    ``backend_dl``: the bundle was built with ``GGML_BACKEND_DL`` and the CPU
    backend (its manifest says so): a CPU module must then be there and load,
    even when the bundle lost every module. A GPU module that loads but
    finds no driver or device (``ggml_backend_init`` returned NULL) loaded:
    its libraries resolved; it is said so, never as a missing library.
    ``driver_env``: see :func:`scrubbed_env`; ``driver``: how the run met the GPU driver, said in the line.
    The CUDA module's own report (found N devices, or why none) is quoted. The log read is the CPU forward
    pass's (:func:`forward_run`; ``forward``: that run, when the caller made it already): ggml loads every
    module at the program's start, before any layer is placed, so one run says both.
    """
    modules = backend_modules(root, os_name)
    if not modules and not backend_dl:
        return SmokeCheck(
            name="backends",
            status=SKIPPED,
            line="backends: skipped: no ggml backend modules beside the programs (not a GGML_BACKEND_DL build)",
        )
    program = _present(root, (FORWARD_PROGRAM,), os_name)
    if program is None:
        return SmokeCheck(
            name="backends",
            status=SKIPPED,
            line=f"backends: skipped: no {FORWARD_PROGRAM} in the bundle (its log says which backends ggml loaded)",
        )
    ran = forward if forward is not None else forward_run(root, program, home, driver_env)
    loaded = {
        Path(m.group("path").replace("\\", "/")).name: m.group("name") for m in _LOADED.finditer(ran.both)
    }
    from pipeline.bundle.gpu_smoke import backend_word, found_no_device

    no_device = found_no_device(ran.both)
    missing = []
    if backend_dl and "cpu" not in modules:
        missing.append(
            f"the CPU backend (no {'ggml-cpu*.dll' if os_name == 'windows' else 'libggml-cpu*.so'} in the bundle)"
        )
    for backend, files in sorted(modules.items()):
        if not any(f in loaded or f in no_device for f in files):
            missing.append(files[0] if len(files) == 1 else f"{backend} ({', '.join(files)})")
    said = ", ".join(f"{name} ({file})" for file, name in sorted(loaded.items(), key=lambda kv: kv[1]))
    idle = [
        f"{backend_word(backend)} ({file}) loaded but found no device"
        for backend, files in sorted(modules.items())
        for file in files
        if file in no_device
    ]
    if idle:
        said = ", ".join(filter(None, [said, *idle]))
    if missing:
        return SmokeCheck(
            name="backends",
            status=FAILED,
            program=program,
            line=f"backends: {', '.join(missing)} did not load in {program} "
            f"(a library it needs is missing or it is broken); loaded: {said or 'nothing'}",
        )
    lister = _present(root, DEVICE_LISTERS, os_name)
    if lister is None:
        devices = f"devices not listed (no {', '.join(DEVICE_LISTERS)})"
    else:
        listed = run_program(root, lister, ["--list-devices"], home, driver_env)
        if listed.exit_code != 0:
            return SmokeCheck(
                name="backends",
                status=FAILED,
                program=lister,
                line=f"backends: {lister} --list-devices exited {listed.exit_code}: {listed.last_line()}",
            )
        devices = f"{lister} --list-devices: {', '.join(_listed_devices(listed.stdout)) or 'no device'} besides the CPU"
    cuda = cuda_report(ran.both)
    notes = "".join(f"; {note}" for note in (cuda, driver) if note)
    return SmokeCheck(
        name="backends",
        status=PASSED,
        program=program,
        line=f"backends: {program} loaded {said}; {devices}{notes}",
    )


def cuda_report(log: str) -> str | None:
    """What ggml's CUDA backend said of the devices at load (``ggml_cuda_init``), in a few words; None if silent."""
    found = _CUDA_FOUND.search(log)
    if found:
        names = _CUDA_DEVICE.findall(log)
        return f"CUDA found {found.group('n')} device(s)" + (f": {', '.join(names)}" if names else "")
    failed = _CUDA_FAILED.search(log)
    return f"CUDA found no device ({failed.group('why').strip()})" if failed else None


def _listed_devices(stdout: str) -> list[str]:
    """The device names ``--list-devices`` printed under "Available devices:" ("(none)": no device)."""
    lines = stdout.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Available devices:")
    except StopIteration:
        return []
    names = []
    for line in lines[start + 1 :]:
        text = line.strip()
        if not line.startswith(" ") or not text or text == "(none)":
            break
        names.append(text.split(":", 1)[0])
    return names


def vocab_test_case(inp: str, out: str) -> tuple[str, list[int]] | None:
    """The first sentence of a tokenizer test pair (two or more plain ASCII words) and its ids.

    The pair's format is llama.cpp's tests/test-tokenizer-0.cpp: inputs
    separated by ``\\n__ggml_vocab_test__\\n``, one line of ids per input.
    """
    inputs = inp.split(_VOCAB_TEST_SEPARATOR)
    outputs = out.splitlines()
    for text, ids in zip(inputs, outputs, strict=False):
        if re.fullmatch(r"[A-Za-z]+(?: [A-Za-z]+)+", text) and ids.strip():
            return text, [int(t) for t in ids.split()]
    return None


def tokenizer_check(
    root: Path, os_name: str, home: Path, models: Path | None, driver_env: Mapping[str, str] | None = None
) -> SmokeCheck:
    """``llama-tokenize`` with the tree's vocab gives the ids the tree's own test expects."""
    program = _present(root, (TOKENIZER,), os_name)
    if program is None:
        return SmokeCheck(
            name="tokenizer", status=SKIPPED, line=f"tokenizer: skipped: no {TOKENIZER} in the bundle"
        )
    if models is None:
        return SmokeCheck(
            name="tokenizer",
            status=SKIPPED,
            program=program,
            line="tokenizer: skipped: no llama.cpp source tree given for its models/ vocab",
        )
    vocab, inp, out = models / VOCAB, models / f"{VOCAB}.inp", models / f"{VOCAB}.out"
    if not (vocab.is_file() and inp.is_file() and out.is_file()):
        return SmokeCheck(
            name="tokenizer",
            status=SKIPPED,
            program=program,
            line=f"tokenizer: skipped: the source tree has no models/{VOCAB} with its .inp/.out pair",
        )
    case = vocab_test_case(inp.read_text(encoding="utf-8"), out.read_text(encoding="utf-8"))
    if case is None:
        return SmokeCheck(
            name="tokenizer",
            status=SKIPPED,
            program=program,
            line=f"tokenizer: skipped: no plain sentence in models/{VOCAB}.inp",
        )
    text, expected = case
    prompt = home / "tokenizer-prompt.txt"
    home.mkdir(parents=True, exist_ok=True)
    prompt.write_bytes(text.encode("utf-8"))
    # As the tree's test tokenizes: no special tokens added, none parsed.
    ran = run_program(
        root,
        program,
        ["-m", str(vocab), "-f", str(prompt), "--ids", "--no-bos", "--no-parse-special", "--log-disable"],
        home,
        driver_env,
    )
    if ran.exit_code != 0:
        return SmokeCheck(
            name="tokenizer",
            status=FAILED,
            program=program,
            line=f"tokenizer: {program} exited {ran.exit_code}: {ran.last_line()}",
        )
    got = _ids(ran.stdout)
    if got != expected:
        return SmokeCheck(
            name="tokenizer",
            status=FAILED,
            program=program,
            line=f"tokenizer: {program} on {VOCAB} gave {got} for {text!r}; {VOCAB}.out expects {expected}",
        )
    return SmokeCheck(
        name="tokenizer",
        status=PASSED,
        program=program,
        line=f"tokenizer: {program} on {VOCAB}: {text!r} -> {got}, as {VOCAB}.out expects",
    )


def _ids(stdout: str) -> list[int] | None:
    """The ``[1, 2, 3]`` line ``llama-tokenize --ids`` prints, or None."""
    for line in reversed(stdout.splitlines()):
        match = re.fullmatch(r"\s*\[([\d,\s]*)\]\s*", line)
        if match:
            return [int(t) for t in match.group(1).replace(",", " ").split()]
    return None


def forward_run(
    root: Path, program: str, home: Path, driver_env: Mapping[str, str] | None = None
) -> ProgramRun:
    """``program`` (llama-simple) generating a few tokens with the tiny model on the CPU (``-ngl 0``, whatever
    GPU the machine has): what the backends and forward-pass checks read, run once for both."""
    from pipeline.bundle.tiny_model import write_tiny_llama

    model = write_tiny_llama(home / "tiny-llama.gguf")
    return run_program(
        root,
        program,
        ["-m", str(model), "-n", str(FORWARD_TOKENS), "-ngl", "0", FORWARD_PROMPT],
        home,
        driver_env,
    )


def forward_pass_check(
    root: Path,
    os_name: str,
    home: Path,
    driver_env: Mapping[str, str] | None = None,
    *,
    forward: ProgramRun | None = None,
) -> SmokeCheck:
    """One generation with a tiny random-weight model on the CPU: the backend variant the machine picked computes.
    ``forward``: the run of :func:`forward_run`, when the caller made it already."""
    program = _present(root, (FORWARD_PROGRAM,), os_name)
    if program is None:
        return SmokeCheck(
            name="forward-pass",
            status=SKIPPED,
            line=f"forward-pass: skipped: no {FORWARD_PROGRAM} in the bundle",
        )
    # On the CPU: no layer offloaded, whatever GPU the machine has (gpu-forward-pass offloads them).
    ran = forward if forward is not None else forward_run(root, program, home, driver_env)
    decoded = _DECODED.search(ran.both)
    # Fewer than asked is fine: a random model may pick its end-of-generation token early.
    if ran.exit_code != 0 or decoded is None or int(decoded.group("n")) < 1:
        return SmokeCheck(
            name="forward-pass",
            status=FAILED,
            program=program,
            line=f"forward-pass: {program} with a tiny model exited {ran.exit_code}: {ran.last_line()}",
        )
    cpu = [
        Path(m.group("path").replace("\\", "/")).name
        for m in _LOADED.finditer(ran.both)
        if m.group("name") == "CPU"
    ]
    on = f" on {cpu[0]}" if cpu else ""
    return SmokeCheck(
        name="forward-pass",
        status=PASSED,
        program=program,
        line=f"forward-pass: {program} decoded {decoded.group('n')} tokens with a tiny random-weight llama model{on}",
    )


def expects_cpu_module(cmake_args: Sequence[str]) -> bool:
    """Do a build's CMake arguments make the CPU backend a loadable module (``GGML_BACKEND_DL`` on, the CPU on)?"""

    def value(name: str) -> str | None:
        found = None
        for arg in cmake_args:
            match = re.fullmatch(rf"-D{name}(?::[A-Z]+)?=(.*)", arg)
            if match:
                found = match.group(1).upper()
        return found

    return value("GGML_BACKEND_DL") in ("ON", "TRUE", "1", "YES") and value("GGML_CPU") not in (
        "OFF",
        "FALSE",
        "0",
        "NO",
    )


def gpu_forward_pass_check(
    root: Path, os_name: str, home: Path, driver_env: Mapping[str, str] | None = None
) -> SmokeCheck | None:
    """The forward pass with every layer offloaded, when the bundle ships a GPU module (None: it ships none).

    Passed naming the device llama.cpp's log says it used; skipped with the
    reason when the machine has no device for any GPU module
    (:mod:`pipeline.bundle.gpu_smoke`); failed when the offloaded run fails.
    """
    from pipeline.bundle.gpu_smoke import (
        CPU_VULKAN_DEVICE,
        GGML_GPU_MODULES,
        GPU_LAYERS,
        backend_word,
        devices_used,
        failed_to_open,
        no_device_reason,
        only_cpu_vulkan_devices,
    )

    # Only GPU backends: the RPC client (libggml-rpc) and BLAS are not devices of this machine.
    gpu = {
        backend: files
        for backend, files in backend_modules(root, os_name).items()
        if backend in GGML_GPU_MODULES
    }
    if not gpu:
        return None
    name = "gpu-forward-pass"
    program = _present(root, (FORWARD_PROGRAM,), os_name)
    if program is None:
        return SmokeCheck(
            name=name, status=SKIPPED, line=f"{name}: skipped: no {FORWARD_PROGRAM} in the bundle"
        )
    from pipeline.bundle.tiny_model import write_tiny_llama

    model = write_tiny_llama(home / "tiny-llama.gguf")
    args = ["-m", str(model), "-n", str(FORWARD_TOKENS), "-ngl", GPU_LAYERS, FORWARD_PROMPT]
    ran = run_program(root, program, args, home, driver_env)
    used = devices_used(ran.both)
    via = ""
    if not used and "vulkan" in gpu and only_cpu_vulkan_devices(ran.both):
        # No GPU, but a CPU Vulkan device (lavapipe): ggml-vulkan takes it when named.
        ran = run_program(root, program, args, home, {**(driver_env or {}), **CPU_VULKAN_DEVICE})
        used = devices_used(ran.both)
        via = ", a CPU Vulkan device (" + " ".join(f"{k}={v}" for k, v in CPU_VULKAN_DEVICE.items()) + ")"
    if not used:
        reasons = [no_device_reason(backend, files[0], ran.both) for backend, files in sorted(gpu.items())]
        # Every module loaded and none found a device: the machine has no GPU, which is no fault of the bundle.
        # A module that did not load is the bundle's, and the backends check fails naming it.
        opened = not any(files[0] in failed_to_open(ran.both) for files in gpu.values())
        verdict = f"no GPU here: {'; '.join(reasons)}" if opened else "; ".join(reasons)
        return SmokeCheck(name=name, status=SKIPPED, program=program, line=f"{name}: skipped: {verdict}")
    decoded = _DECODED.search(ran.both)
    device = used[0]
    if ran.exit_code != 0 or decoded is None or int(decoded.group("n")) < 1:
        return SmokeCheck(
            name=name,
            status=FAILED,
            program=program,
            line=f"{name}: {program} on {device.name} ({device.description}) exited {ran.exit_code}: "
            f"{ran.last_line()}",
        )
    backend = next(
        (b for b in sorted(gpu) if device.name.lower().startswith(backend_word(b).split("/")[0].lower())),
        next(iter(sorted(gpu))),
    )
    return SmokeCheck(
        name=name,
        status=PASSED,
        program=program,
        line=f"{name}: {program} decoded {decoded.group('n')} tokens on {device.name} "
        f"({device.description}){via}, the {backend_word(backend)} backend "
        f"({', '.join(gpu[backend])})",
    )


def smoke_checks(
    root: Path,
    os_name: str,
    home: Path,
    *,
    models: Path | None,
    backend_dl: bool = False,
    driver_env: Mapping[str, str] | None = None,
    driver: str | None = None,
    prefix: Sequence[str] = (),
) -> tuple[list[SmokeRun], list[SmokeCheck]]:
    """Every check of the smoke run on the unpacked bundle ``root``; ``models``: the source tree's models/;
    ``backend_dl``, ``driver_env`` and ``driver``: see :func:`backends_check`; ``prefix``: the emulator
    every program runs under."""
    token = PROGRAM_PREFIX_ARGS.set(tuple(prefix))
    try:
        runs = [run_version(root, p, home, driver_env) for p in main_programs(root, os_name)]
        # One CPU forward pass, read by the backends check (which modules loaded) and the forward-pass check.
        program = _present(root, (FORWARD_PROGRAM,), os_name)
        forward = forward_run(root, program, home, driver_env) if program is not None else None
        checks = [
            versions_check(runs),
            backends_check(
                root,
                os_name,
                home,
                backend_dl=backend_dl,
                driver_env=driver_env,
                driver=driver,
                forward=forward,
            ),
            tokenizer_check(root, os_name, home, models, driver_env),
            forward_pass_check(root, os_name, home, driver_env, forward=forward),
        ]
        if (gpu := gpu_forward_pass_check(root, os_name, home, driver_env)) is not None:
            checks.append(gpu)
    finally:
        PROGRAM_PREFIX_ARGS.reset(token)
    return runs, checks
