"""The README stays short and true, the docs site orphans no page, and no doc or comment cites the tracker."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.source.build_info import build_info_args
from pipeline.source.checkout import CheckoutInfo, folder_tag

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# A README read in two minutes: what it is, install, the two commands, where results land, what next.
README_MAX_LINES = 150


def _nav_pages(text: str | None = None) -> list[str]:
    """The pages mkdocs.yml's nav names (``- Title: page.md``), in order; comments are not pages."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8") if text is None else text
    nav = text.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s*-\s+[^:#\n]+:\s+(\S+\.md)\s*$", nav, re.MULTILINE)


def _slug(heading: str) -> str:
    # Python-Markdown's toc slugify, which mkdocs uses for anchors.
    text = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+?)\s*$", text, re.MULTILINE)}


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    nav = _nav_pages()
    assert len(nav) == len(set(nav)), nav
    assert sorted(nav) == pages, "add each docs/*.md page to mkdocs.yml's nav (and no page that is missing)"


def test_the_nav_parser_sees_pages_and_skips_comments() -> None:
    # The check above is only as good as its reading of the nav.
    nav = _nav_pages()
    assert nav[0] == "index.md" and "architecture.md" in nav and "settings.md" in nav
    snippet = "site_name: x\nnav:\n  - Home: index.md\n  # - Old: old.md\n  #   docs/draft.md\n  - Two words: b.md\n"
    assert _nav_pages(snippet) == ["index.md", "b.md"]


def test_the_readme_stays_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move the detail to docs/"


def _readme_block_after(label: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    match = re.search(re.escape(label) + r"\s*\n+```sh\n(.*?)```", text, re.S)
    assert match, f"README.md has no ```sh block after {label!r}"
    return [line for line in match.group(1).splitlines() if line.strip()]


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    (command,) = _readme_block_after("Run the tests:")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    steps = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert steps[-1] == command, ".ci/run must end with the README's test command, as written there"
    assert "nox -s lint" in steps, ".ci/run runs the lint session (it builds the docs site too)"


def test_the_readme_names_the_main_job_command() -> None:
    (command,) = _readme_block_after("Build a leg (here the CPU bundle from an existing llama.cpp checkout):")
    assert command == "nox -s cpu -- --source ../llama.cpp"


def test_what_the_readme_says_a_non_git_folder_gets_is_what_it_gets() -> None:
    readme = README.read_text(encoding="utf-8")
    tag = folder_tag(CheckoutInfo(commit=None, tag=None, dirty=False))
    assert f"tagged `{tag}`" in readme
    # No build number or commit is handed to llama.cpp, whose build-info.cmake then says build 0, commit unknown.
    assert build_info_args(tag, None) == []
    assert "`build 0, commit unknown`" in readme


def test_relative_links_in_the_readme_and_docs_resolve() -> None:
    broken = []
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_architecture_page_is_architecture_md_itself() -> None:
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert '--8<-- "ARCHITECTURE.md"' in page.splitlines()
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    # A missing include must fail the build, not render an empty page.
    assert re.search(r"pymdownx\.snippets:\n(\s+.*\n)*?\s+check_paths: true", config)


def test_no_placeholder_in_prose_reads_as_an_html_tag() -> None:
    # `<leg>` in a code span shows; a bare <leg> is taken for an HTML tag and vanishes from the page.
    found = []
    # ARCHITECTURE.md too: the architecture page includes it.
    for page in [README, ROOT / "ARCHITECTURE.md", *sorted(DOCS.rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        text = re.sub(r"`[^`]*`", "", text)
        found += [f"{page.relative_to(ROOT)}: {m}" for m in re.findall(r"<[A-Za-z/][^>\n]*>", text)]
    assert found == []


# Built from pieces so that this file does not match itself.
_TRACKER = re.compile(r"\b" + "issue" + r"s?\s+#?\d+", re.IGNORECASE)
_LOAD_NOTE = re.compile(r"load average|loaded cores|load about \d|shared with other", re.IGNORECASE)


def _tree_files() -> list[Path]:
    files = [
        README,
        ROOT / "ARCHITECTURE.md",
        ROOT / "noxfile.py",
        ROOT / "matrix.toml",
        ROOT / ".ci" / "run",
        ROOT / "mkdocs.yml",
    ]
    for folder, pattern in (
        ("docs", "*.md"),
        ("pipeline", "*.py"),
        ("scripts", "*.py"),
        ("tests", "*.py"),
        (".github", "*.yml"),
    ):
        files += sorted((ROOT / folder).rglob(pattern))
    return files


def test_no_tracker_numbers_in_docs_or_code() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _tree_files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _TRACKER.search(line)
    ]
    assert offenders == []


def test_no_machine_load_notes_in_the_docs() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in [README, *sorted(DOCS.rglob("*.md"))]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _LOAD_NOTE.search(line)
    ]
    assert offenders == []


def _keys_table() -> str:
    page = (DOCS / "matrix.md").read_text(encoding="utf-8")
    return page.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]


def test_every_key_of_the_shipped_matrix_is_in_the_reference() -> None:
    import tomllib

    shipped = tomllib.loads((ROOT / "matrix.toml").read_text(encoding="utf-8"))
    table = _keys_table()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    missing = []
    for section, body in shipped.items():
        if section == "legs":
            wanted = [f"`legs.<name>.{key}`" for leg in body.values() for key in leg]
        elif section == "toolchains":
            # [toolchains.cuda] and [toolchains.vulkan.<os>]: each key named in its row.
            cuda, vulkan = body.get("cuda", {}), body.get("vulkan", {})
            row_cuda = next(r for r in rows if r.startswith("| `[toolchains.cuda]`"))
            row_vulkan = next(r for r in rows if r.startswith("| `[toolchains.vulkan.<os>]`"))
            wheel_keys = {k for w in cuda.get("wheels", []) for k in w} | {
                f"sha256.{os_name}" for w in cuda.get("wheels", []) for os_name in w.get("sha256", {})
            }
            missing += [
                k for k in (set(cuda) - {"wheels"}) | (wheel_keys - {"sha256"}) if f"`{k}`" not in row_cuda
            ]
            missing += [k for pin in vulkan.values() for k in pin if f"`{k}`" not in row_vulkan]
            # Another CUDA line: [toolchains.cuda-<line>], its keys in its row.
            row_line = next((r for r in rows if r.startswith("| `[toolchains.cuda-<line>]`")), "")
            missing += [
                f"toolchains.{name}.{k}"
                for name, pin in body.items()
                if name.startswith("cuda-")
                for k in [*pin, *pin.get("redist", {})]
                if f"`{k}`" not in row_line
            ]
            continue
        elif section in ("cuda_profiles", "rocm_families"):
            # Tables of named entries: one row, [section.<name>], naming the keys each entry has.
            row = next((r for r in rows if r.startswith(f"| `[{section}.<")), None)
            entry_keys = {k for entry in body.values() if isinstance(entry, dict) for k in entry}
            missing += [f"[{section}]"] if row is None else [k for k in entry_keys if f"`{k}`" not in row]
            continue
        else:
            wanted = [f"`{section}.{key}`" for key in body]
        missing += [w for w in wanted if not any(r.startswith(f"| {w}") for r in rows)]
    assert missing == []


def test_the_bundle_names_in_getting_started_are_the_template_or_a_legs_real_name() -> None:
    """No arch hard-coded in the template: every name is ``-<arch>`` or one ``legs`` gives for tag b1234."""
    from pipeline.backends import leg_description
    from pipeline.inputs.matrix import load_matrix

    shipped = load_matrix(ROOT / "matrix.toml")
    real = {leg_description(shipped, leg, tag="b1234")["bundle"] for leg in shipped.legs.values()}
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    names = re.findall(r"`(?:out/dist/)?(llama-[^`]*-bin-[^`]*)`", text)
    templates = [n for n in names if "<" in n]
    examples = [n for n in names if "<" not in n]
    assert templates == ["llama-<tag>-bin-<os>-<variant>-<arch>.tar.gz"]
    assert examples and set(examples) <= real
    # An example of each arch, so neither reads as the only one.
    assert {"x64", "arm64"} <= {re.sub(r"\.(tar\.gz|zip)$", "", n).rsplit("-", 1)[1] for n in examples}
