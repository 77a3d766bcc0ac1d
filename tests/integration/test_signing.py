"""Authenticode signing of a Windows bundle, with real signatures: a throwaway CA, mingw-built PE files, osslsigncode.

The Actions path end to end through the CLI: the build's stage (made by the
pipeline's own staging, record ``staged``), a signer outside the pipeline (as
the workflow's sign step is) signing the staged files with osslsigncode, then
``python -m pipeline pack``. A good signature packs, checks and verifies;
each bad one is refused with one line naming the file: a byte changed after
signing, a file left unsigned, a certificate of another CA, an expired
certificate without a timestamp (with one, made in its days of validity, it
passes), another publisher. The local signer (``--signing-pfx``) signs the
same files itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.bundle.authenticode import LocalSigner
from pipeline.bundle.make import load_staged, pack_staged, save_staged, stage_bundle
from pipeline.bundle.signing import SigningPlan, sign_and_check
from pipeline.bundle.stage import STAGE_DIR
from pipeline.errors import BundleError
from pipeline.inputs.leg import Leg
from pipeline.inputs.matrix import load_matrix
from pipeline.results.record import LegRecord
from pipeline.toolchain.toolchain import Toolchain
from tests.support.pipeline_cli import run_pipeline
from tests.support.pki import OTHER_PUBLISHER, PASSWORD, PUBLISHER, Pki, make_pki, sign
from tests.support.projects import write_matrix

pytestmark = pytest.mark.integration

MINGW = "x86_64-w64-mingw32-gcc"
if shutil.which(MINGW) is None or shutil.which("osslsigncode") is None:
    pytest.skip(
        f"{MINGW} and osslsigncode make and sign the PE files (Debian: gcc-mingw-w64-x86-64, osslsigncode)",
        allow_module_level=True,
    )

REPO = "octo/llama-release"
LEG = "cpu-windows"
SIGNING = f'''
[legs.{LEG}]
backend = "cpu"
os = "windows"

[signing]
legs = ["*-windows"]
publisher = "{PUBLISHER}"
repository = "{REPO}"
'''
TOOLCHAIN = Toolchain(kind="msvc", identity="msvc-19.44", compilers={"C": "cl 19.44", "CXX": "cl 19.44"})
# Inside the 2025 validity of the expired certificate and of the timestamp authority.
IN_2025 = int(datetime(2025, 6, 1, tzinfo=UTC).timestamp())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Windows build's output: a program and the library it imports, made by mingw."""
    root = tmp_path_factory.mktemp("winbuild")
    bin_dir = root / "build" / "bin"
    bin_dir.mkdir(parents=True)
    (root / "base.c").write_text("__declspec(dllexport) int ggml_base(void) { return 7; }\n")
    (root / "main.c").write_text(
        "int ggml_base(void);\nint main(void) { return ggml_base() == 7 ? 0 : 1; }\n"
    )
    subprocess.run([MINGW, "-shared", "-o", str(bin_dir / "ggml-base.dll"), str(root / "base.c")], check=True)
    subprocess.run(
        [MINGW, "-o", str(bin_dir / "llama-cli.exe"), str(root / "main.c"), str(bin_dir / "ggml-base.dll")],
        check=True,
    )
    (root / "src").mkdir()
    (root / "src" / "LICENSE").write_text("MIT License\n")
    return root


@dataclass
class Run:
    out: Path
    matrix: Path
    env: dict[str, str]

    def pack(self) -> subprocess.CompletedProcess[str]:
        return run_pipeline(["--matrix", str(self.matrix), "pack", LEG, "--out", str(self.out)], env=self.env)

    def record(self) -> dict[str, object]:
        return json.loads((self.out / LEG / "record.json").read_text())


def staged_run(tmp: Path, build_dir: Path, pki: Pki) -> Run:
    """What the build leaves on Actions in the signing repository: the stage, its state, a ``staged`` record."""
    matrix = write_matrix(tmp / "matrix.toml", extra=SIGNING)
    leg = load_matrix(matrix).leg(LEG)
    out = tmp / "out"
    record = LegRecord(
        leg=LEG,
        backend="cpu",
        os="windows",
        started="2026-12-06T09:17:00+00:00",
        status="staged",
        source={"tag": "b100", "path": str(build_dir / "src")},
        toolchain=TOOLCHAIN.to_record(),
    )
    staged = stage_bundle(
        leg=leg,
        record=record,
        build_dir=build_dir / "build",
        out_dir=out,
        toolchain=TOOLCHAIN,
        tag="b100",
        commit="c" * 40,
    )
    save_staged(staged, out)
    record.write(out / LEG / "record.json")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": REPO,
        "PIPELINE_SIGNING_CA": str(pki.ca),
        "GITHUB_OUTPUT": "",
        "GITHUB_STEP_SUMMARY": "",
    }
    return Run(out=out, matrix=matrix, env=env)


def stage_files(run: Run) -> dict[str, Path]:
    stage = run.out / LEG / STAGE_DIR
    return {p.name: p for p in sorted(stage.iterdir()) if p.suffix in (".exe", ".dll")}


def test_the_workflows_signature_packs_checks_and_verifies(tmp_path: Path, build_dir: Path, pki: Pki) -> None:
    run = staged_run(tmp_path, build_dir, pki)
    files = stage_files(run)
    assert sorted(files) == ["ggml-base.dll", "llama-cli.exe"]
    for path in files.values():
        sign(path, pki.publisher_pfx)
    proc = run.pack()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = run.record()
    assert record["status"] == "success" and record["bundle"] == "dist/llama-b100-bin-win-cpu-x64.zip"
    bundle = run.out / str(record["bundle"])
    with zipfile.ZipFile(bundle) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        sbom = json.loads(zf.read("sbom.cdx.json"))
    assert manifest["signing"] == {"publisher": PUBLISHER}
    signed = {f["path"]: f.get("signed_by") for f in manifest["files"]}
    assert signed["llama-cli.exe"] == PUBLISHER and signed["ggml-base.dll"] == PUBLISHER
    assert signed["LICENSE"] is None
    by_path = {
        next(p["value"] for p in c["properties"] if p["name"] == "llama-pipeline:path"): {
            p["name"]: p["value"] for p in c["properties"]
        }
        for c in sbom["components"]
        if c.get("properties") and any(p["name"] == "llama-pipeline:path" for p in c["properties"])
    }
    assert by_path["ggml-base.dll"]["llama-pipeline:signed-by"] == PUBLISHER
    assert "llama-pipeline:signed-by" not in by_path["LICENSE"]

    check = run_pipeline(["check-bundle", str(bundle), "--no-smoke", "--json", "--signing-ca", str(pki.ca)])
    assert check.returncode == 0, check.stdout + check.stderr
    verified = run_pipeline(["verify", str(bundle), "--signing-ca", str(pki.ca)])
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"signature: ggml-base.dll: signed by {PUBLISHER}: verified" in verified.stdout
    assert f"signature: llama-cli.exe: signed by {PUBLISHER}: verified" in verified.stdout
    # Asked for another publisher, verify refuses every file, each on its line.
    other = run_pipeline(["verify", str(bundle), "--signing-ca", str(pki.ca), "--publisher", OTHER_PUBLISHER])
    assert other.returncode == 1
    assert (
        f"error: ggml-base.dll: signed by {PUBLISHER!r}, not by the release's publisher {OTHER_PUBLISHER!r}"
        in other.stdout
    )
    # Without the test CA among the trusted roots nothing verifies: the system's roots do not know it.
    untrusted = run_pipeline(["check-bundle", str(bundle), "--no-smoke", "--json"])
    assert untrusted.returncode == 1
    lines = [p["file"] + ": " + p["message"] for p in json.loads(untrusted.stdout)["problems"]]
    assert (
        "ggml-base.dll: its signature does not verify: its certificate does not chain to a trusted root"
        in lines
    )


def _sign_then_tamper(path: Path, pki: Pki) -> None:
    sign(path, pki.publisher_pfx)
    data = bytearray(path.read_bytes())
    data[0x400] ^= 0xFF  # inside the first section: code the signature covers
    path.write_bytes(bytes(data))


BAD: dict[str, tuple[Callable[[Path, Pki], None], str]] = {
    "a byte changed after signing": (
        _sign_then_tamper,
        "its signature does not verify: the file changed after it was signed (its digest is not the signed one)",
    ),
    "left unsigned": (lambda p, pki: None, "not signed"),
    "a certificate of another CA": (
        lambda p, pki: sign(p, pki.foreign_pfx),
        "its signature does not verify: its certificate does not chain to a trusted root",
    ),
    "an expired certificate, no timestamp": (
        lambda p, pki: sign(p, pki.expired_pfx),
        "its signature does not verify: certificate has expired",
    ),
    "another publisher": (
        lambda p, pki: sign(p, pki.other_publisher_pfx),
        f"signed by {OTHER_PUBLISHER!r}, not by the release's publisher {PUBLISHER!r}",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_pack_refuses_a_bad_signature_naming_the_file(
    tmp_path: Path, build_dir: Path, pki: Pki, case: str
) -> None:
    run = staged_run(tmp_path, build_dir, pki)
    files = stage_files(run)
    sign(files["llama-cli.exe"], pki.publisher_pfx)
    spoil, reason = BAD[case]
    spoil(files["ggml-base.dll"], pki)
    proc = run.pack()
    assert proc.returncode != 0
    # On Actions the one line is an error annotation.
    assert proc.stderr.strip().splitlines() == [f"::error::signing: ggml-base.dll: {reason}"], proc.stderr
    assert run.record()["status"] == "failed"
    assert not (run.out / "dist").exists() or not any((run.out / "dist").iterdir())


def test_an_expired_certificate_with_a_timestamp_from_its_validity_passes(
    tmp_path: Path, build_dir: Path, pki: Pki
) -> None:
    run = staged_run(tmp_path, build_dir, pki)
    for path in stage_files(run).values():
        sign(path, pki.expired_pfx, tsa=(pki.tsa_chain, pki.tsa_key, IN_2025))
    proc = run.pack()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verified = run_pipeline(
        ["verify", str(run.out / str(run.record()["bundle"])), "--signing-ca", str(pki.ca)]
    )
    assert verified.returncode == 0, verified.stdout
    assert (
        f"signature: ggml-base.dll: signed by {PUBLISHER}, timestamped Jun  1 00:00:00 2025 GMT: verified"
        in (verified.stdout)
    )


def test_check_bundle_refuses_an_unsigned_file_in_a_bundle_that_says_it_is_signed(
    tmp_path: Path, build_dir: Path, pki: Pki
) -> None:
    run = staged_run(tmp_path, build_dir, pki)
    files = stage_files(run)
    sign(files["llama-cli.exe"], pki.publisher_pfx)
    # Packed by hand, past pack's own check: a bundle made elsewhere that claims its signer.
    bundle, _ = pack_staged(load_staged(run.out, LEG), out_dir=run.out, signing={"publisher": PUBLISHER})
    check = run_pipeline(["check-bundle", str(bundle), "--no-smoke", "--json", "--signing-ca", str(pki.ca)])
    assert check.returncode == 1
    problems = json.loads(check.stdout)["problems"]
    assert [(p["file"], p["kind"], p["message"]) for p in problems] == [
        ("ggml-base.dll", "signature", "not signed")
    ]


def test_the_local_signer_signs_every_program_and_library(tmp_path: Path, build_dir: Path, pki: Pki) -> None:
    run = staged_run(tmp_path, build_dir, pki)
    stage = run.out / LEG / STAGE_DIR
    signer = LocalSigner(pfx=pki.publisher_pfx, password=PASSWORD, description=PUBLISHER)
    plan = SigningPlan(publisher=PUBLISHER, signer=signer, trusted=pki.ca)
    assert sign_and_check(stage, plan, environ=os.environ) == {
        "ggml-base.dll": PUBLISHER,
        "llama-cli.exe": PUBLISHER,
    }
    # A wrong password: osslsigncode's refusal, one line, and the file is left as it was.
    before = (stage / "ggml-base.dll").read_bytes()
    wrong = SigningPlan(
        publisher=PUBLISHER,
        signer=LocalSigner(pfx=pki.publisher_pfx, password="nope", description=PUBLISHER),
        trusted=pki.ca,
    )
    with pytest.raises(BundleError, match=r"^signing ggml-base.dll: osslsigncode failed"):
        sign_and_check(stage, wrong, environ=os.environ)
    assert (stage / "ggml-base.dll").read_bytes() == before
    assert not list(stage.glob("*.signed"))


def test_pack_refuses_a_leg_that_is_not_staged(tmp_path: Path, build_dir: Path, pki: Pki) -> None:
    run = staged_run(tmp_path, build_dir, pki)
    data = run.record()
    data["status"] = "success"
    (run.out / LEG / "record.json").write_text(json.dumps(data))
    proc = run.pack()
    assert proc.returncode == 2
    assert "is success, not staged" in proc.stderr and "Traceback" not in proc.stderr


def test_a_covered_leg_builds_unsigned_in_a_fork(tmp_path: Path, pki: Pki) -> None:
    """Outside [signing] repository and without a PFX, the plan is none, with the line saying why."""
    from pipeline.bundle.signing import signing_plan
    from tests.support.inputs import make_inputs

    matrix = load_matrix(write_matrix(tmp_path / "matrix.toml", extra=SIGNING))
    leg: Leg = matrix.leg(LEG)
    fork = make_inputs(
        matrix, now=datetime.now(UTC), environ={"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "fork/x"}
    )
    plan, why = signing_plan(fork, leg)
    assert plan is None and why is not None and "this run builds it unsigned" in why
    home = make_inputs(
        matrix, now=datetime.now(UTC), environ={"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": REPO}
    )
    plan, why = signing_plan(home, leg)
    assert plan is not None and plan.signer is None and plan.publisher == PUBLISHER and why is None
    local = make_inputs(
        matrix,
        now=datetime.now(UTC),
        environ={"PIPELINE_SIGNING_PFX": str(pki.publisher_pfx), "PIPELINE_SIGNING_PASSWORD": PASSWORD},
    )
    plan, _ = signing_plan(local, leg)
    assert plan is not None and plan.signer is not None and plan.signer.pfx == pki.publisher_pfx
    assert signing_plan(home, matrix.leg("cpu")) == (None, None)


def _sign_step(workflow: Path) -> str:
    """nightly.yml's sign step, verbatim: from its ``- name:`` line to the line before the next step or comment."""
    lines = workflow.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("- name: Sign the staged"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(("      - ", "      #")))
    return "\n".join(lines[start:end])


def test_the_workflows_sign_step_signs_under_act_through_the_stand_in_with_its_own_inputs(
    tmp_path: Path, build_dir: Path, pki: Pki
) -> None:
    """The sign step as nightly.yml writes it, run by act (a real Actions runner) with the stand-in of
    azure/trusted-signing-action, whose inputs are the real action's: what it signs, ``pack`` packs and verifies."""
    from tests.support.act import STAND_INS, act_binary

    run = staged_run(tmp_path, build_dir, pki)
    stage = run.out / LEG / STAGE_DIR
    nightly = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "nightly.yml"
    step = _sign_step(nightly)
    assert "uses: azure/trusted-signing-action@" in step and "files-folder: " in step
    # The account and profile name the PKCS#12 file under SIGNING_STAND_IN_DIR; the client secret is its password.
    standin = tmp_path / "standin"
    (standin / "test-account").mkdir(parents=True)
    shutil.copy(pki.publisher_pfx, standin / "test-account" / "test-profile.pfx")
    workdir = tmp_path / "repo"
    (workdir / ".github" / "workflows").mkdir(parents=True)
    # The build step's one output the sign step reads: the staged folder (nightly.yml's build sets it so).
    (workdir / ".github" / "workflows" / "sign.yml").write_text(
        "name: sign\non: workflow_dispatch\njobs:\n  build:\n    runs-on: windows-2022\n    defaults: { run: { shell: bash } }\n"
        "    steps:\n      - name: Build, staging the bundle as nightly.yml's does\n        id: build\n"
        f'        run: echo "staged={stage}" >> "$GITHUB_OUTPUT"\n{step}\n',
        encoding="utf-8",
    )
    (workdir / "event.json").write_text(json.dumps({"inputs": {}, "ref": "refs/heads/main"}))
    sha = re.search(r"uses: azure/trusted-signing-action@([0-9a-f]{40})", step)
    assert sha is not None
    ref = f"azure/trusted-signing-action@{sha.group(1)}"
    folder = STAND_INS / f"azure-trusted-signing-action@{sha.group(1)}"
    secrets = {
        "AZURE_TENANT_ID": "tenant-0000-stand-in",
        "AZURE_CLIENT_ID": "client-0000-stand-in",
        "AZURE_CLIENT_SECRET": PASSWORD,
        "AZURE_TRUSTED_SIGNING_ACCOUNT_NAME": "test-account",
        "AZURE_CERTIFICATE_PROFILE_NAME": "test-profile",
    }
    cmd = [act_binary(), "workflow_dispatch", "-W", ".github/workflows/sign.yml", "-C", str(workdir),
           "-e", str(workdir / "event.json"), "-P", "windows-2022=-self-hosted",
           "--action-cache-path", str(tmp_path / "act-cache"), "--local-repository", f"{ref}={folder}",
           "--env-file", os.devnull, "--secret-file", os.devnull, "--var-file", os.devnull,
           "--var", "AZURE_SIGNING_ENDPOINT=https://signing.invalid/", "--env", f"SIGNING_STAND_IN_DIR={standin}",
           *(arg for name, value in secrets.items() for arg in ("-s", f"{name}={value}"))]  # fmt: skip
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=workdir)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    for name in ("ggml-base.dll", "llama-cli.exe"):
        assert f"signed {stage / name}" in log
    packed = run.pack()
    assert packed.returncode == 0, packed.stdout + packed.stderr
    bundle = run.out / str(run.record()["bundle"])
    verified = run_pipeline(["verify", str(bundle), "--signing-ca", str(pki.ca)])
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"signature: llama-cli.exe: signed by {PUBLISHER}: verified" in verified.stdout
