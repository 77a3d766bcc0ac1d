"""``python -m pipeline check-bundle BUNDLE``: would this bundle run on a clean machine?"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from pipeline.errors import UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.inputs.runners import glibc_problem
from pipeline.util.tree_removal import remove_tree

_EPILOG = """\
The bundle is unpacked into an empty temporary folder. It fails (exit 1),
naming the file and the library, when a program or library needs a library
that is neither in the bundle nor on the OS's base-system allowlist, when a
RUNPATH/RPATH names an absolute (build-machine) folder or has an empty or
relative entry (searched in the current working folder), when it requires a
GLIBC_x.y above the leg's floor (glibc_max in matrix.toml, recorded in the
manifest; default 2.35), when a file is built for another arch than the
bundle's (arch in the manifest; each arch has its base system), when LICENSE
is missing, or when a file copied from the toolchain (a redistributed runtime)
has no license file in the bundle (the manifest's third_party list names
them). A macOS bundle: install names inside the bundle or under
/usr/lib and /System/Library, @loader_path-relative LC_RPATHs, LC_BUILD_VERSION
minos at most the leg's macos_min (13.3) and, on arm64, code signatures that
match the files. Then, unless --no-smoke or the bundle is for another OS, the
smoke run (a Linux arm64 bundle on x86-64 runs under qemu-aarch64 -L
/usr/aarch64-linux-gnu, Debian's qemu-user), in a scrubbed environment
(no LD_LIBRARY_PATH, no toolchain on PATH, HOME elsewhere), one line per
check: each llama-* program starts (--version); the backends load (every
ggml backend module of a GGML_BACKEND_DL bundle, a GPU one without a GPU,
in llama-simple; --list-devices names the devices); llama-tokenize gives
the ids llama.cpp's tokenizer test expects (needs --source-tree);
llama-simple generates tokens with a tiny random-weight model. A check
whose program is not in the bundle is skipped, saying why. A Windows bundle
whose manifest names a signing publisher ([signing] in matrix.toml): every
.exe and .dll carries an Authenticode signature that verifies (osslsigncode,
against --signing-ca's roots or the system's) and names that publisher.
Exit codes: 0 passed, 1 failed, 9 not a readable bundle.
"""


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check-bundle",
        help="check that a bundle carries its runtime and runs on a clean machine",
        description="Check a bundle: needed libraries, RUNPATHs, glibc floor, LICENSE, and a smoke run "
        "(--version, backends, tokenizer, one forward pass).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bundle", metavar="BUNDLE", type=Path, help="a bundle (.tar.gz or .zip)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--no-smoke", action="store_true", help="skip running the programs (a bundle for another OS)"
    )
    p.add_argument("--glibc-max", metavar="X.Y", help="the glibc floor instead of the manifest's (e.g. 2.35)")
    p.add_argument(
        "--source-tree",
        metavar="DIR",
        type=Path,
        help="the llama.cpp tree the bundle was built from: its models/ vocab for the tokenizer check",
    )
    S.add_flag(p, S.SIGNING_CA)
    p.set_defaults(func=run, needs_matrix=False)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.bundle.check import check_bundle, host_os

    if args.glibc_max and (bad := glibc_problem(args.glibc_max)):
        raise UsageError(f"--glibc-max {args.glibc_max}: expected {bad}")
    if args.source_tree is not None and not args.source_tree.is_dir():
        raise UsageError(f"--source-tree {args.source_tree}: no such folder")
    scratch = Path(tempfile.mkdtemp(prefix="check-bundle-"))
    try:
        result = check_bundle(
            args.bundle,
            scratch=scratch / "work",
            host_os=host_os(),
            glibc_max=args.glibc_max,
            smoke=not args.no_smoke,
            source_tree=args.source_tree,
            environ=inputs.environ,
            signing_ca=inputs.signing_ca,
        )
    finally:
        with contextlib.suppress(OSError):
            remove_tree(scratch)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        for problem in result.problems:
            print(f"error: {problem.line}")
        for smoke in result.smoke:
            print(f"{smoke.program} --version: exit {smoke.exit_code}")
        for check in result.checks:
            print(check.line)
        if result.smoke_skipped:
            print(f"smoke test skipped: {result.smoke_skipped}")
        if result.glibc_required:
            print(
                f"highest glibc required: {result.glibc_required} ({result.glibc_required_by}); "
                f"floor {result.glibc_max}"
            )
        print(f"{args.bundle}: {result.summary}")
    return 0 if result.ok else 1
