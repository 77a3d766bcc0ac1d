"""The order the test files start in (tests/conftest.py ``FIRST``) and the server the legs share units through."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import FIRST
from tests.support.ccache_http import HttpStorage

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def test_every_file_that_starts_first_exists_once() -> None:
    # A renamed file would silently fall back to collection order (and the cpu leg could run after its readers).
    assert len(set(FIRST)) == len(FIRST)
    missing = [name for name in FIRST if not (TESTS / name).is_file()]
    assert missing == [], missing


def test_the_cpu_leg_starts_before_every_leg_that_reads_its_units() -> None:
    cpu = FIRST.index("integration/test_real_tree.py")
    readers = [
        "integration/test_real_tree_cuda.py",
        "integration/test_act_nightly.py",
        "integration/test_vulkan_real_tree.py",
    ]
    assert cpu == 0 and all(FIRST.index(name) > cpu for name in readers)
    # The second worker's first file shares nothing with the cpu leg: it runs while the cpu leg compiles.
    assert FIRST[1] == "integration/test_rocm_real_tree.py"


# pytest's own collection, several times in one process (each a `pytest --collect-only` of its arguments):
# one interpreter start and one import of the test modules instead of one per collection.
_COLLECT = """
import json, sys
import pytest

class Items:
    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]

found = []
for args in json.loads(sys.argv[1]):
    items = Items()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args], plugins=[items])
    if code != 0:
        sys.exit(f"pytest --collect-only {' '.join(args)}: exit {int(code)}")
    found.append(items.ids)
print("COLLECTED " + json.dumps(found))
"""


def collections(*runs: list[str]) -> list[list[str]]:
    """The test ids pytest collects with each of ``runs``' arguments, in collection order."""
    proc = subprocess.run([sys.executable, "-c", _COLLECT, json.dumps(runs)], cwd=ROOT, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(line for line in proc.stdout.splitlines() if line.startswith("COLLECTED "))
    return json.loads(line.removeprefix("COLLECTED "))  # type: ignore[no-any-return]


def files_of(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(i.split("::")[0].removeprefix("tests/") for i in ids))


def test_collection_follows_the_order_and_nox_keeps_it() -> None:
    """pytest's own collection: the FIRST files in that order, before any other file."""
    selected = ["tests/unit/test_cli.py", *(f"tests/{name}" for name in reversed(FIRST))]
    (ids,) = collections(["-m", "", *selected])
    assert files_of(ids) == [*FIRST, "unit/test_cli.py"], files_of(ids)
    # Without --no-loadscope-reorder, pytest-xdist would sort the files by their number of tests.
    assert '"--dist", "loadfile", "--no-loadscope-reorder"' in (ROOT / "noxfile.py").read_text(
        encoding="utf-8"
    )


def test_the_suite_keeps_the_three_legs_it_must_and_e2e_selects_the_moved_builds_by_leg() -> None:
    """docs/testing.md, "Which legs run where": with pyproject's addopts (nox -s tests) the rocm and cpu real-tree
    builds and act's nights run, the cuda, cpu-arm64 and vulkan builds and act's warm-up week do not; `nox -s e2e --
    --leg cuda` takes both of the cuda leg's e2e tests and nothing else."""
    vulkan = ["tests/integration/test_vulkan_real_tree.py"]
    warm_up = "tests/integration/test_act_warm_up.py"
    suite, e2e, arm64, vulkan_suite, vulkan_e2e, rocm_e2e = collections(
        [*(f"tests/{name}" for name in FIRST), "tests/integration/test_real_tree_configure.py", warm_up],
        ["-m", "long", "--leg", "cuda", "tests"],
        ["-m", "long", "--leg", "cpu-arm64", "tests/integration"],
        vulkan,
        ["-m", "long", *vulkan],
        ["-m", "long", "--leg", "rocm-linux-gfx110X", "tests/integration"],
    )
    assert set(files_of(suite)) == {
        "integration/test_real_tree.py",
        "integration/test_rocm_real_tree.py",
        "integration/test_act_nightly.py",
        "integration/test_vulkan_real_tree.py",
        "integration/test_real_tree_configure.py",
    }, suite
    assert set(files_of(e2e)) == {"integration/test_real_tree_cuda.py", "e2e/test_shipped_legs.py"}, e2e
    assert files_of(arm64) == ["integration/test_real_tree_arm64.py"], arm64
    # act's Saturday warm-up and Sunday night (the rocm leg's, about 5 minutes): in e2e, by its leg.
    assert files_of(rocm_e2e) == ["integration/test_act_warm_up.py"], rocm_e2e
    # The vulkan file keeps its cheap refusal in the suite; its build is in e2e.
    assert [i.split("::")[1] for i in vulkan_suite] == [
        "test_headers_too_old_stop_the_vulkan_leg_before_configure"
    ]
    assert [i.split("::")[1] for i in vulkan_e2e] == [
        "test_the_real_tree_vulkan_leg_builds_and_its_bundle_runs"
    ]


def test_a_folder_storage_serves_what_was_put_and_refuses_paths_outside_it(tmp_path: Path) -> None:
    with HttpStorage(tmp_path / "units") as storage:
        request = urllib.request.Request(f"{storage.url}/ab/cdef", data=b"entry", method="PUT")
        assert urllib.request.urlopen(request, timeout=10).status == 201
        assert urllib.request.urlopen(f"{storage.url}/ab/cdef", timeout=10).read() == b"entry"
        assert (tmp_path / "units" / "ab" / "cdef").read_bytes() == b"entry"
        assert storage.entries() == 1
        for path in ("/ab/missing", "/../escape", "/ab/../../escape"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(storage.url + path, timeout=10)
            assert err.value.code == 404, path
        # Nothing was written outside the folder, and no temporary file is left beside the entry.
        assert sorted(p.name for p in (tmp_path / "units").rglob("*")) == ["ab", "cdef"]
