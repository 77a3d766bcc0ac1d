"""Source resolution and deterministic mix checkouts against real git repositories."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pipeline.errors import ResolutionError, SourceError
from pipeline.inputs.matrix import MixPin, SourceConfig
from pipeline.inputs.mix import MIX_AUTHOR_EMAIL, MIX_AUTHOR_NAME
from pipeline.inputs.resolution_file import SourceSpec
from pipeline.source import checkout as _source
from tests.support.gitrepos import clone, commit_files, git, init_repo, tag


def _template() -> str:
    """The git URL template as the CLI would fix it from this process's environment."""
    from tests.support.inputs import make_inputs

    return make_inputs(environ=dict(os.environ), with_resolution=False).git_url_template


# The source functions take the run's environment and git URL template; these tests run in this process's.
def resolve_source(*args: Any, git_url_template: str | None = None, **kwargs: Any) -> SourceSpec:
    return _source.resolve_source(
        *args, git_url_template=git_url_template or _template(), environ=os.environ, **kwargs
    )


def checkout_source(*args: Any, git_url_template: str | None = None, **kwargs: Any) -> str:
    return _source.checkout_source(
        *args, git_url_template=git_url_template or _template(), environ=os.environ, **kwargs
    )


def describe_checkout(path: Path) -> Any:
    return _source.describe_checkout(path, environ=os.environ)


pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)


@dataclass
class Forge:
    """An upstream repo with dated tags, and `owner/name` pull-request repos beside it."""

    upstream: Path
    template: str
    prs: dict[str, MixPin]


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> Forge:
    root = tmp_path_factory.mktemp("forge")
    up = init_repo(root / "upstream")
    base_text = "".join(f"line {i}\n" for i in range(1, 21))
    commit_files(
        up,
        {"a.txt": base_text, "main.c": "int main(void) { return 0; }\n"},
        "start",
        when=NOW - timedelta(hours=60),
    )
    tag(up, "b99", when=NOW - timedelta(hours=60))
    commit_files(up, {"b.txt": "b\n"}, "b100", when=NOW - timedelta(hours=48))
    tag(up, "b100", when=NOW - timedelta(hours=48))
    commit_files(up, {"c.txt": "c\n"}, "b101", when=NOW - timedelta(hours=30))
    # Annotated, and dated later than its commit: the tag's own date counts.
    tag(up, "b101", when=NOW - timedelta(hours=10), annotated=True)
    commit_files(up, {"d.txt": "d\n"}, "b102", when=NOW - timedelta(hours=2))
    tag(up, "b102", when=NOW - timedelta(hours=2))
    tag(up, "v9.9", when=NOW - timedelta(hours=1))

    gh = root / "gh"
    fork = clone(up, gh / "ggml-org" / "llama.cpp")
    prs: dict[str, MixPin] = {}

    def pr(repo_dir: Path, repo: str, number: int, files: dict[str, str], start: str = "b100") -> None:
        git(repo_dir, "checkout", "--quiet", "-b", f"pr{number}", start)
        sha = commit_files(repo_dir, files, f"PR {number}", when=NOW - timedelta(hours=40))
        prs[f"pr{number}"] = MixPin(repo=repo, number=number, sha=sha)
        git(repo_dir, "checkout", "--quiet", "master")

    pr(fork, "ggml-org/llama.cpp", 1, {"pr1.txt": "one\n"})
    pr(fork, "ggml-org/llama.cpp", 2, {"a.txt": base_text.replace("line 3\n", "line 3 from PR 2\n")})
    pr(fork, "ggml-org/llama.cpp", 3, {"a.txt": base_text.replace("line 3\n", "line 3 from PR 3\n")})
    alice = clone(up, gh / "alice" / "llama.cpp")
    pr(alice, "alice/llama.cpp", 4, {"a.txt": base_text.replace("line 18\n", "line 18 from alice\n")})
    return Forge(upstream=up, template=f"file://{gh}/{{repo}}", prs=prs)


def cfg(
    forge: Forge, *, tag: str = "latest", min_age: float = 6.0, mix: tuple[MixPin, ...] = ()
) -> SourceConfig:
    return SourceConfig(repo=str(forge.upstream), tag=tag, min_age_hours=min_age, mix=mix)


# ---------------------------------------------------------------- resolution


def test_latest_passes_over_tags_younger_than_min_age(forge: Forge) -> None:
    spec = resolve_source(cfg(forge), now=NOW, git_url_template=forge.template)
    # b102 is 2 h old at NOW, b101's annotated tag 10 h: b101 wins.
    assert spec.base_tag == "b101"
    assert spec.base_commit == git(forge.upstream, "rev-parse", "b101^{commit}")
    assert spec.base_date == "2026-03-14T02:00:00Z"
    assert spec.tag == "b101" and spec.commit == spec.base_commit


def test_latest_takes_the_newest_when_it_is_old_enough(forge: Forge) -> None:
    spec = resolve_source(cfg(forge, min_age=1.0), now=NOW)
    assert spec.base_tag == "b102"


def test_latest_in_the_past_ignores_tags_made_after_now(forge: Forge) -> None:
    # 20 h before NOW, b101 (tagged NOW-10h) and b102 did not exist yet; numeric
    # order puts b100 above b99 although "b99" sorts higher as text.
    spec = resolve_source(cfg(forge, min_age=0), now=NOW - timedelta(hours=20))
    assert spec.base_tag == "b100"


def test_no_tag_old_enough(forge: Forge) -> None:
    with pytest.raises(ResolutionError, match=r"no b<digits> tag is at least 100 h old.*newest: b102"):
        resolve_source(cfg(forge, min_age=100), now=NOW)


def test_explicit_tag(forge: Forge) -> None:
    spec = resolve_source(cfg(forge, tag="latest"), now=NOW, tag="b100")
    assert spec.base_tag == "b100"
    assert spec.commit == git(forge.upstream, "rev-parse", "b100")


def test_unknown_tag(forge: Forge) -> None:
    with pytest.raises(ResolutionError, match=r"tag 'b777' not found in .*upstream \(newest: b102\)"):
        resolve_source(cfg(forge, tag="b777"), now=NOW)


def test_unreachable_repo(tmp_path: Path) -> None:
    missing = SourceConfig(repo=str(tmp_path / "nothing-here"))
    with pytest.raises(SourceError, match="cannot list the tags of"):
        resolve_source(missing, now=NOW)


def test_malformed_pin(forge: Forge) -> None:
    bad = MixPin(repo="ggml-org/llama.cpp", number=1, sha="abc123")
    with pytest.raises(SourceError, match=r"ggml-org/llama.cpp#1: sha 'abc123' is not 40 lowercase hex"):
        resolve_source(cfg(forge, mix=(bad,)), now=NOW, git_url_template=forge.template)


def test_unknown_pin_repo(forge: Forge) -> None:
    ghost = MixPin(repo="nobody/nothing", number=5, sha="1" * 40)
    with pytest.raises(SourceError, match="mix pin repo nobody/nothing not found at file://"):
        resolve_source(cfg(forge, mix=(ghost,)), now=NOW, git_url_template=forge.template)


# ---------------------------------------------------------------- checkout and mix


def test_two_clones_make_the_same_merge_commit(
    forge: Forge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mix = (forge.prs["pr1"], forge.prs["pr4"], forge.prs["pr2"])
    spec = resolve_source(cfg(forge, mix=mix), now=NOW, git_url_template=forge.template)
    first = checkout_source(spec, tmp_path / "one", git_url_template=forge.template)

    # The second machine has its own identity and merge habits in its git config.
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Someone Else\n\temail = else@example.invalid\n[merge]\n\tlog = true\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Someone Else")
    second = checkout_source(spec, tmp_path / "two", git_url_template=forge.template)

    assert first == second
    assert spec.tag == "b101-mix-" + hashlib.sha256("\n".join(p.line for p in mix).encode()).hexdigest()[:7]
    work = tmp_path / "two"
    assert (work / "pr1.txt").read_text() == "one\n"
    text = (work / "a.txt").read_text()
    assert "line 3 from PR 2\n" in text and "line 18 from alice\n" in text
    # One merge per pin, on top of the base, by the fixed identity, dated base + 1, 2, 3 s.
    log = git(
        work, "log", "--first-parent", "--format=%an <%ae> %ct %cn %s", f"{spec.base_commit}..HEAD"
    ).splitlines()
    base_time = int(git(work, "show", "-s", "--format=%ct", str(spec.base_commit)))
    assert len(log) == 3
    for i, line in enumerate(reversed(log)):
        assert line.startswith(
            f"{MIX_AUTHOR_NAME} <{MIX_AUTHOR_EMAIL}> {base_time + i + 1} {MIX_AUTHOR_NAME} Merge {mix[i].repo}#{mix[i].number}"
        )
    assert git(work, "status", "--porcelain") == ""


def test_reused_clone_gives_the_same_commit_and_drops_stray_files(forge: Forge, tmp_path: Path) -> None:
    mix = (forge.prs["pr1"],)
    spec = resolve_source(cfg(forge, mix=mix), now=NOW, git_url_template=forge.template)
    dest = tmp_path / "src"
    first = checkout_source(spec, dest, git_url_template=forge.template)
    (dest / "stray.o").write_text("left over")
    (dest / "a.txt").write_text("edited")
    again = checkout_source(SourceSpec.from_json(spec.to_json()), dest, git_url_template=forge.template)
    assert again == first
    assert not (dest / "stray.o").exists()
    assert (dest / "a.txt").read_text().startswith("line 1\n")


def test_plain_tag_checkout_is_the_tag_commit(forge: Forge, tmp_path: Path) -> None:
    spec = resolve_source(cfg(forge, tag="b100"), now=NOW)
    head = checkout_source(spec, tmp_path / "src")
    assert head == spec.base_commit
    info = describe_checkout(tmp_path / "src")
    assert (info.commit, info.tag, info.dirty) == (head, "b100", False)


def test_describe_a_folder_without_git(tmp_path: Path) -> None:
    info = describe_checkout(tmp_path)
    assert (info.commit, info.tag) == (None, None)


def test_describing_a_checkout_asks_git_for_its_top_and_head_at_once(
    forge: Forge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A --source build describes its tree with one git fewer: the repository's top and HEAD in one run;
    a folder inside another repository is still no repository of its own."""
    spec = resolve_source(cfg(forge, tag="b100"), now=NOW)
    head = checkout_source(spec, tmp_path / "src")
    runs: list[list[str]] = []
    real = _source.run_git
    monkeypatch.setattr(_source, "run_git", lambda args, **kw: (runs.append(list(args)), real(args, **kw))[1])
    info = describe_checkout(tmp_path / "src")
    assert (info.commit, info.tag, info.dirty) == (head, "b100", False)
    assert runs == [
        ["rev-parse", "--show-toplevel", "HEAD"],
        ["describe", "--tags", "--exact-match", "HEAD"],
        ["status", "--porcelain", "--untracked-files=no"],
    ]
    (tmp_path / "src" / "copy").mkdir()
    runs.clear()
    inside = describe_checkout(tmp_path / "src" / "copy")
    assert (inside.commit, inside.tag, inside.dirty) == (None, None, False) and len(runs) == 1


def test_conflicting_merge_names_the_pr_and_the_files(forge: Forge, tmp_path: Path) -> None:
    mix = (forge.prs["pr2"], forge.prs["pr3"])
    spec = resolve_source(cfg(forge, mix=mix), now=NOW, git_url_template=forge.template)
    with pytest.raises(
        SourceError,
        match=r"mix pin ggml-org/llama.cpp#3 \([0-9a-f]{12}\) conflicts with b101 \+ #2 in: a.txt$",
    ):
        checkout_source(spec, tmp_path / "src", git_url_template=forge.template)
    # The failed merge is aborted, not left half-done.
    assert git(tmp_path / "src", "status", "--porcelain") == ""


def test_pinned_commit_missing(forge: Forge, tmp_path: Path) -> None:
    ghost = MixPin(repo="ggml-org/llama.cpp", number=9, sha="0123456789abcdef0123456789abcdef01234567")
    spec = resolve_source(cfg(forge, mix=(ghost,)), now=NOW, git_url_template=forge.template)
    with pytest.raises(
        SourceError,
        match=r"mix pin ggml-org/llama.cpp#9: commit 0123456789abcdef0123456789abcdef01234567 not found",
    ):
        checkout_source(spec, tmp_path / "src", git_url_template=forge.template)


def test_dest_cloned_from_another_repo_is_refused(forge: Forge, tmp_path: Path) -> None:
    other = clone(forge.upstream.parent / "gh" / "alice" / "llama.cpp", tmp_path / "other")
    spec = resolve_source(cfg(forge, tag="b100"), now=NOW)
    with pytest.raises(SourceError, match="already a clone of"):
        checkout_source(spec, other)


def test_url_template_from_environment(forge: Forge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_GIT_URL_TEMPLATE", forge.template)
    spec = resolve_source(cfg(forge, mix=(forge.prs["pr4"],)), now=NOW)
    head = checkout_source(spec, tmp_path / "src")
    assert git(tmp_path / "src", "rev-parse", "HEAD^2") == forge.prs["pr4"].sha
    assert head == git(tmp_path / "src", "rev-parse", "HEAD")


# ---------------------------------------------------------------- the run's resolution


def test_the_run_resolution_carries_the_source_to_every_leg(
    forge: Forge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline import run_resolution as resolve
    from pipeline.inputs.matrix import parse_matrix
    from pipeline.inputs.resolution_file import write_resolution
    from tests.support.inputs import make_inputs

    def resolve_run(matrix: Any, *, now: datetime, source: bool) -> Any:
        return resolve.resolve_run(make_inputs(matrix, now=now, environ=dict(os.environ)), source=source)

    def source_for_run(matrix: Any, options: dict[str, Any]) -> SourceSpec:
        now = options.pop("now", NOW)
        return resolve.source_for_run(make_inputs(matrix, now=now, environ=dict(os.environ), **options))

    def LegOptions(**flags: Any) -> dict[str, Any]:
        return flags

    monkeypatch.setenv("PIPELINE_GIT_URL_TEMPLATE", forge.template)
    pr1 = forge.prs["pr1"]
    matrix = parse_matrix(
        {
            "source": {
                "repo": str(forge.upstream),
                "mix": [{"repo": pr1.repo, "number": pr1.number, "sha": pr1.sha}],
            },
            "legs": {"cpu": {"backend": "cpu"}},
        },
        tmp_path / "matrix.toml",
    )
    resolution = resolve_run(matrix, now=NOW, source=True)
    assert resolution.source is not None and resolution.source.base_tag == "b101"
    path = tmp_path / "resolved.json"
    write_resolution(path, resolution)

    # Two days later b102 is old enough, yet a leg still builds what the run resolved.
    spec = source_for_run(matrix, LegOptions(resolved=str(path), now=NOW + timedelta(days=2)))
    assert spec == resolution.source
    assert spec.tag == resolution.source.tag and spec.tag.startswith("b101-mix-")
    # Without a resolution, the leg resolves on its own at its moment.
    assert source_for_run(matrix, LegOptions(now=NOW + timedelta(days=2))).base_tag == "b102"
    with pytest.raises(ResolutionError, match=r"--tag b100 contradicts the run's resolution"):
        source_for_run(matrix, LegOptions(resolved=str(path), tag="b100"))
