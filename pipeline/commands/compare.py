"""``python -m pipeline compare A B``: two bundles, folders or manifests, file by file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.inputs.run_inputs import RunInputs

_EPILOG = """\
A and B are bundles (.tar.gz or .zip), folders (an unpacked bundle or any
tree) or manifest.json files. Files are compared by size and sha256; a
bundle's manifest.json is compared as inputs (tag, source commit, toolchain,
CMake arguments), not as a file. Exit code: 0 when identical, 1 when not.
"""


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help="compare two bundles (or folders, or manifests) file by file",
        description="Compare two bundles file by file: identical, differing (with sizes), only in A, only in B.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("a", metavar="A", type=Path, help="a bundle, folder or manifest.json")
    p.add_argument("b", metavar="B", type=Path, help="a bundle, folder or manifest.json")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run, needs_matrix=False)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    # Here, not at the top: reading bundles loads the ELF, PE and SBOM libraries, which `--help` must not.
    from pipeline.bundle.compare import compare
    from pipeline.commands.shared.comparison_table import print_comparison

    result = compare(args.a, args.b)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        from pipeline.util.console import make_console

        print_comparison(make_console(inputs.environ), result)
    return 0 if result.same else 1
