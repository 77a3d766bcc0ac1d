"""The release plan: coverage, SHA256SUMS, notes and the upload plan, against pinned expectations."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from pipeline.errors import PublishError
from pipeline.release.plan import (
    LocalAsset,
    RemoteAsset,
    built_tag,
    check_coverage,
    leg_result,
    parse_digest,
    plan_uploads,
    refuse_unplanned_partial,
    release_notes,
    replaces_assets,
    sha256sums_text,
)

SOURCE = {
    "repo": "https://github.com/ggml-org/llama.cpp",
    "base_tag": "b7000",
    "base_commit": "1111111111111111111111111111111111111111",
    "tag": "b7000-mix-abcdef0",
    "commit": "2222222222222222222222222222222222222222",
    "mix": [{"repo": "ggml-org/llama.cpp", "number": 123, "sha": "3333333333333333333333333333333333333333"}],
}


def record(leg: str, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "leg": leg,
        "started": "2026-08-10T09:17:00+00:00",
        "status": "success",
        "bundle": f"dist/llama-b7000-mix-abcdef0-bin-linux-{leg}-x64.tar.gz",
        "toolchain": {"identity": f"{leg}-tc-1.0"},
        "ccache": {"hit_rate": 0.5},
        "wall_seconds": 754.4,
        "source": SOURCE,
    }
    data.update(extra)
    return data


def results(*records: dict[str, Any]) -> dict[str, Any]:
    return {r["leg"]: leg_result(r, where=r["leg"]) for r in records}


def test_coverage_names_each_missing_leg_and_why() -> None:
    res = results(record("cpu"), record("cuda", status="failed"), record("vulkan", bundle=None))
    present = {"dist/llama-b7000-mix-abcdef0-bin-linux-cpu-x64.tar.gz"}
    cov = check_coverage(["cpu", "cuda", "vulkan", "rocm"], res, present)
    assert not cov.ok
    assert [r.leg for r in cov.present] == ["cpu"]
    assert cov.missing == (
        ("cuda", "the leg failed"),
        ("vulkan", "its record names no bundle"),
        ("rocm", "no record"),
    )
    assert cov.problem().startswith("3 expected leg(s) cannot be published: cuda: the leg failed; ")


def test_a_configure_only_record_is_never_published() -> None:
    res = results(record("cuda", status="configured", bundle=None))
    cov = check_coverage(["cuda"], res, set())
    assert cov.missing == (("cuda", "the leg was only configured (build --configure-only), never built"),)


def test_allow_missing_lets_a_failed_leg_through_and_a_bundle_must_exist() -> None:
    res = results(record("cpu"), record("cuda", status="failed"), record("extra"))
    cov = check_coverage(["cpu", "cuda"], res, set(), {"cuda"})
    # cpu's bundle file is not there: that blocks even though its record is fine.
    assert cov.missing == (
        ("cpu", "bundle dist/llama-b7000-mix-abcdef0-bin-linux-cpu-x64.tar.gz is not in the output folder"),
    )
    assert cov.allowed_missing == (("cuda", "the leg failed"),)
    assert cov.unexpected == ("extra",)


def test_a_failed_bundle_check_blocks_and_a_missing_one_is_not_checked() -> None:
    res = results(
        record("cpu", bundle_check={"ok": False, "problems": ["libfoo.so: RUNPATH is /build"]}),
        record("cuda"),
    )
    present = {r.bundle for r in res.values() if r.bundle}
    cov = check_coverage(["cpu", "cuda"], res, present)
    assert cov.missing == (("cpu", "bundle check failed: libfoo.so: RUNPATH is /build"),)
    assert cov.present[0].check_text == "not checked"
    assert leg_result(record("x", bundle_check={"ok": True}), where="x").check_text == "passed"


def test_built_tag_is_the_one_tag_of_the_records() -> None:
    res = results(record("cpu"), record("cuda"))
    assert built_tag(list(res.values())) == "b7000-mix-abcdef0"
    other = leg_result(record("vulkan", source={"tag": "b7001"}), where="v")
    with pytest.raises(PublishError, match="different tags"):
        built_tag([*res.values(), other])
    with pytest.raises(PublishError, match="--tag"):
        built_tag([leg_result(record("cpu", source={}), where="c")])


def test_sha256sums_is_what_sha256sum_writes() -> None:
    a, b = hashlib.sha256(b"a").hexdigest(), hashlib.sha256(b"b").hexdigest()
    assert sha256sums_text([("z.zip", b), ("a.tar.gz", a)]) == (
        "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.tar.gz\n"
        "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  z.zip\n"
    )
    with pytest.raises(PublishError):
        sha256sums_text([("a\nb", a)])


def test_release_notes_pinned() -> None:
    res = results(record("cpu"), record("cuda", ccache={}, wall_seconds=3725, bundle_check="passed"))
    cov = check_coverage(
        ["cpu", "cuda", "vulkan"], res, {r.bundle for r in res.values() if r.bundle}, {"vulkan"}
    )
    assert release_notes("b7000-mix-abcdef0", cov) == (
        "llama.cpp prebuilt bundles for `b7000-mix-abcdef0`.\n"
        "\n"
        "- llama.cpp tag: `b7000`, commit `2222222222222222222222222222222222222222`\n"
        "- base commit: `1111111111111111111111111111111111111111`\n"
        "- merged pull requests (in order):\n"
        "  - ggml-org/llama.cpp#123 at `3333333333333333333333333333333333333333`\n"
        "\n"
        "| leg | bundle | toolchain | ccache hit rate | wall time | bundle check |\n"
        "|---|---|---|---:|---:|---|\n"
        "| cpu | `llama-b7000-mix-abcdef0-bin-linux-cpu-x64.tar.gz` | cpu-tc-1.0 | 50.0% | 12m 34s | not checked |\n"
        "| cuda | `llama-b7000-mix-abcdef0-bin-linux-cuda-x64.tar.gz` | cuda-tc-1.0 | - | 1h 02m | passed |\n"
        "| vulkan | missing | - | - | - | no record |\n"
        "\n"
        "Verify a download with `sha256sum -c SHA256SUMS --ignore-missing`.\n"
    )


def test_notes_without_mix_say_none() -> None:
    plain = {"tag": "b7000", "commit": "abc"}
    res = results(record("cpu", source=plain))
    cov = check_coverage(["cpu"], res, {r.bundle for r in res.values() if r.bundle})
    notes = release_notes("b7000", cov)
    assert "- llama.cpp tag: `b7000`, commit `abc`\n- merged pull requests: none\n" in notes


def local(name: str, data: bytes) -> LocalAsset:
    return LocalAsset(name=name, sha256=hashlib.sha256(data).hexdigest(), size=len(data), path=f"/x/{name}")


def remote(ident: int, name: str, data: bytes, state: str = "uploaded", digest: bool = True) -> RemoteAsset:
    return RemoteAsset(id=ident, name=name, size=len(data), state=state,
                       sha256=hashlib.sha256(data).hexdigest() if digest else None)  # fmt: skip


def test_upload_plan_resumes_keeps_same_reuploads_starter_and_puts_sums_last() -> None:
    mine = [local("SHA256SUMS", b"sums"), local("b.zip", b"B"), local("a.tar.gz", b"A"), local("c.zip", b"C")]
    there = [
        remote(1, "a.tar.gz", b"A"),
        remote(2, "b.zip", b"B-half", state="starter"),
        remote(3, "old.txt", b"o"),
    ]
    plan = plan_uploads(mine, there)
    assert [(s.action, s.name) for s in plan.steps] == [
        ("keep", "a.tar.gz"),
        ("reupload", "b.zip"),
        ("upload", "c.zip"),
        ("upload", "SHA256SUMS"),
    ]
    assert plan.extra == ("old.txt",)
    assert plan.conflicts == ()


def test_a_differing_asset_is_a_conflict_unless_replace() -> None:
    mine = [local("a.tar.gz", b"new")]
    there = [remote(1, "a.tar.gz", b"old")]
    conflict = plan_uploads(mine, there).steps[0]
    assert conflict.action == "conflict"
    assert conflict.reason.startswith("sha256 ")
    assert plan_uploads(mine, there, replace=True).steps[0].action == "replace"


def test_without_a_digest_the_size_decides() -> None:
    assert plan_uploads([local("a", b"xy")], [remote(1, "a", b"zz", digest=False)]).steps[0].action == "keep"
    assert (
        plan_uploads([local("a", b"xy")], [remote(1, "a", b"zzz", digest=False)]).steps[0].action
        == "conflict"
    )


def test_parse_digest() -> None:
    hexd = "ab" * 32
    assert parse_digest(f"sha256:{hexd}") == hexd
    assert parse_digest("sha1:abc") is None
    assert parse_digest(None) is None


def test_left_out_names_the_matrix_legs_without_a_bundle_and_built_commit_wants_one_full_sha() -> None:
    from pipeline.release.plan import Coverage, LegResult, built_commit, left_out

    def leg(name: str, commit: str) -> LegResult:
        return LegResult(leg=name, status="success", bundle=f"dist/{name}.tar.gz", toolchain="t", hit_rate=None,
                         wall_seconds=1.0, source={"tag": "b1", "commit": commit})  # fmt: skip

    full = "ab" * 20
    cov = Coverage(
        present=(leg("cpu", full),), missing=(), allowed_missing=(("cuda", "the leg failed"),), unexpected=()
    )
    assert left_out(["rocm", "cuda", "cpu"], cov) == ("rocm", "cuda")
    assert left_out(["cpu"], cov) == ()
    assert built_commit([leg("cpu", full), leg("cuda", full)]) == full
    assert built_commit([leg("cpu", full), leg("cuda", "cd" * 20)]) is None  # legs disagree
    assert built_commit([leg("cpu", full[:7])]) is None  # GitHub takes full SHAs only


def test_a_run_of_some_legs_publishes_only_with_partial() -> None:
    refuse_unplanned_partial(["cpu", "cuda"], ["cpu", "cuda"], partial_allowed=False)
    refuse_unplanned_partial(["cpu"], ["cpu", "cuda"], partial_allowed=True)
    with pytest.raises(PublishError, match=r"expects 1 of the 2 legs of matrix.toml \(not cuda\).*--partial"):
        refuse_unplanned_partial(["cpu"], ["cpu", "cuda"], partial_allowed=False)


@pytest.mark.parametrize(
    ("asked", "forced", "prerelease", "partial", "expected"),
    [
        (False, False, False, (), False),  # a rerun keeps what is up
        (True, False, False, (), True),  # --replace
        (False, True, False, (), True),  # the workflow's force
        (False, False, True, (), True),  # a full run completes a partial release
        (False, False, True, ("cuda",), False),  # a partial run onto a partial release keeps
    ],
)
def test_when_assets_that_differ_are_replaced(
    asked: bool, forced: bool, prerelease: bool, partial: tuple[str, ...], expected: bool
) -> None:
    assert (
        replaces_assets(asked=asked, forced=forced, release_is_prerelease=prerelease, partial=partial)
        is expected
    )


def test_an_interrupted_replacement_is_read_from_the_staged_and_previous_names() -> None:
    new_a, new_b = hashlib.sha256(b"A2").hexdigest(), hashlib.sha256(b"B2").hexdigest()
    mine = [local("a.tar.gz", b"A2"), local("b.zip", b"B2"), local("c.zip", b"C")]
    there = [
        remote(1, f"a.tar.gz.previous-{7}", b"A1"),  # set aside; its new copy took the name
        remote(2, "a.tar.gz", b"A2"),
        remote(3, "b.zip", b"B1"),
        remote(4, f"b.zip.pending-{new_b[:16]}", b"B2"),  # staged, checked, not renamed yet
        remote(5, f"c.zip.pending-{new_a[:16]}", b"A2"),  # staged bytes that are not c.zip's
        remote(6, "c.zip.pending-0123456789abcdef", b"C", state="starter"),
        remote(7, "notes.txt", b"kept by hand"),
    ]
    plan = plan_uploads(mine, there, replace=True)
    assert [(s.action, s.name, s.staged.id if s.staged else None) for s in plan.steps] == [
        ("keep", "a.tar.gz", None),
        ("replace", "b.zip", 4),
        ("upload", "c.zip", None),
    ]
    assert [a.id for a in plan.leftovers] == [5, 6]
    assert [a.id for a in plan.retired] == [1]
    assert plan.extra == ("notes.txt",)
    # Staged bytes of the wrong size are never taken for these, even without a digest.
    short = plan_uploads(
        [local("b.zip", b"B2")], [remote(4, f"b.zip.pending-{new_b[:16]}", b"B", digest=False)]
    )
    assert short.steps[0].staged is None and [a.id for a in short.leftovers] == [4]
