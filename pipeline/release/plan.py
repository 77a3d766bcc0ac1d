"""What a nightly release holds and how to get there: pure, no I/O.

From the legs' records (plain JSON objects) this module decides whether the
run may be published (coverage), renders ``SHA256SUMS`` and the release
notes, and plans the uploads against what the release already holds, so a
rerun after a crash resumes instead of starting over:

- an asset already there with the same sha256 is kept;
- one left half-uploaded (GitHub's ``starter`` state) is uploaded again;
- one that differs is a conflict unless ``replace`` (then replaced).

A replacement is never a removal first: the new bytes go up under a staged
name (``<name>.pending-<sha256[:16]>``), are checked, and only then take the
name; the old copy steps aside (``<name>.previous-<id>``) and is deleted once
the whole release is new. A rerun reads what an interrupted run left from
those names: a staged copy of the right bytes is renamed instead of sent
again, one of other bytes and every previous copy are deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.errors import PublishError
from pipeline.names import COMMIT_SHA, SHA256_HEX
from pipeline.util.timeutil import duration_text

SUMS_NAME = "SHA256SUMS"
# The release carries the source its bundles were built from, as the release job's does.
SOURCE_ASSET = "llama.cpp-source-{tag}.tar.gz"


def source_asset_name(tag: str) -> str:
    """The source archive's asset name: ``llama.cpp-source-<tag>.tar.gz``."""
    return SOURCE_ASSET.format(tag=tag)


# A LegResult's status when its record says none (never "success").
NO_STATUS = "no status"

Action = Literal["upload", "keep", "reupload", "replace", "conflict"]


# --------------------------------------------------------------------------
# Legs


@dataclass(frozen=True, kw_only=True)
class LegResult:
    """What the release needs from one leg's record."""

    leg: str
    status: str
    # The bundle's path relative to the run's output folder, if the leg made one.
    bundle: str | None
    toolchain: str
    hit_rate: float | None
    wall_seconds: float
    # None: the bundle was not checked; else whether the check passed, and what it said.
    check_ok: bool | None = None
    check_text: str = "not checked"
    # The check's first problem as one line ("LICENSE: missing"), when it failed on one.
    check_problem: str | None = None
    source: Mapping[str, Any] = field(default_factory=dict)
    # A failed run's error line and exit code, as its record states them.
    error: str | None = None
    exit_code: int | None = None
    # A ROCm leg whose build was stale (pipeline/rocm/staleness.py): ``<os> <family>`` and the record's line.
    stale_family: str | None = None
    stale: str | None = None

    @property
    def bundle_file_name(self) -> str | None:
        return self.bundle.rsplit("/", 1)[-1] if self.bundle else None


def _bundle_check(value: Any) -> tuple[bool | None, str]:
    """A record's ``bundle_check`` (absent: not checked) as (passed?, one line)."""
    if value is None:
        return None, "not checked"
    if isinstance(value, bool):
        return value, "passed" if value else "failed"
    if isinstance(value, str):
        return value.strip().lower() in ("ok", "pass", "passed", "success"), value
    if isinstance(value, Mapping):
        ok_value = value.get("ok", value.get("passed"))
        status = value.get("status")
        if not isinstance(ok_value, bool) and isinstance(status, str):
            ok_value = status.lower() in ("ok", "pass", "passed", "success")
        ok = ok_value if isinstance(ok_value, bool) else None
        detail = value.get("summary") or value.get("message") or value.get("problems")
        if isinstance(detail, list):
            detail = "; ".join(str(d) for d in detail[:3])
        head = "not checked" if ok is None else "passed" if ok else "failed"
        return ok, f"{head}: {detail}" if detail else head
    return None, "not checked"


def _first_problem(value: Any) -> str | None:
    """The first of a record's ``bundle_check.problems`` as one line (``file: message``, or a plain line)."""
    problems = value.get("problems") if isinstance(value, Mapping) else None
    if not isinstance(problems, list) or not problems:
        return None
    first = problems[0]
    if isinstance(first, Mapping):
        text = (
            f"{first.get('file')}: {first.get('message')}" if first.get("file") else str(first.get("message"))
        )
        return text.strip() or None
    return str(first).strip() or None


def leg_result(data: Mapping[str, Any], *, where: str) -> LegResult:
    """A record's JSON object -> LegResult; PublishError naming ``where`` when malformed."""
    leg = data.get("leg")
    if not isinstance(leg, str) or not leg:
        raise PublishError(f"{where}: not a leg record (no 'leg')")
    bundle = data.get("bundle")
    toolchain = data.get("toolchain") if isinstance(data.get("toolchain"), Mapping) else {}
    ccache = data.get("ccache") if isinstance(data.get("ccache"), Mapping) else {}
    hit_rate = ccache.get("hit_rate") if isinstance(ccache, Mapping) else None
    wall = data.get("wall_seconds", 0.0)
    source = data.get("source")
    ok, text = _bundle_check(data.get("bundle_check"))
    return LegResult(
        leg=leg,
        # No status is no success: a record cut short or hand-made must not publish its bundle.
        status=status if isinstance(status := data.get("status"), str) and status else NO_STATUS,
        bundle=bundle if isinstance(bundle, str) and bundle else None,
        toolchain=_toolchain_text(toolchain) if isinstance(toolchain, Mapping) else "?",
        hit_rate=float(hit_rate)
        if isinstance(hit_rate, (int, float)) and not isinstance(hit_rate, bool)
        else None,
        wall_seconds=float(wall) if isinstance(wall, (int, float)) else 0.0,
        check_ok=ok,
        check_text=text,
        check_problem=_first_problem(data.get("bundle_check")) if ok is False else None,
        source=source if isinstance(source, Mapping) else {},
        error=error if isinstance(error := data.get("error"), str) and error else None,
        exit_code=code
        if isinstance(code := data.get("exit_code"), int) and not isinstance(code, bool)
        else None,
        **_stale_of(data, toolchain if isinstance(toolchain, Mapping) else {}),
    )


def _stale_of(data: Mapping[str, Any], toolchain: Mapping[str, Any]) -> dict[str, str]:
    """``stale_family`` and ``stale`` of a record whose ROCm build was stale; nothing otherwise."""
    stale, details = toolchain.get("stale"), toolchain.get("details")
    family = details.get("family") if isinstance(details, Mapping) else None
    os_name = data.get("os")
    if isinstance(stale, str) and stale and isinstance(family, str) and isinstance(os_name, str):
        return {"stale_family": f"{os_name} {family}", "stale": stale}
    return {}


def _toolchain_text(toolchain: Mapping[str, Any]) -> str:
    """The release notes' toolchain cell: its identity, and for CUDA the oldest driver its runtime starts on."""
    identity = str(toolchain.get("identity", "?"))
    details = toolchain.get("details")
    floor = details.get("driver_min") if isinstance(details, Mapping) else None
    return f"{identity}; NVIDIA driver {floor}" if isinstance(floor, str) and floor else identity


@dataclass(frozen=True, kw_only=True)
class Coverage:
    """The expected legs split into publishable ones and the missing (with why)."""

    present: tuple[LegResult, ...]
    # (leg, why) for legs that block publishing, and for those --allow-missing let through.
    missing: tuple[tuple[str, str], ...]
    allowed_missing: tuple[tuple[str, str], ...]
    # Records of legs that were not expected: left out of the release.
    unexpected: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.missing

    def problem(self) -> str:
        """One line naming every blocking leg and why."""
        legs = "; ".join(f"{leg}: {why}" for leg, why in self.missing)
        return f"{len(self.missing)} expected leg(s) cannot be published: {legs} (pass --allow-missing LEG to publish without)"


def _why_missing(result: LegResult | None, bundles_present: Set[str]) -> str | None:
    if result is None:
        return "no record"
    if result.status == NO_STATUS:
        return "its record has no status"
    if result.status == "configured":
        return "the leg was only configured (build --configure-only), never built"
    if result.status == "staged":
        return "its bundle was staged for signing and never packed (`pack` did not run or failed)"
    if result.status != "success":
        return f"the leg {result.status}"
    if result.bundle is None:
        return "its record names no bundle"
    if result.bundle not in bundles_present:
        return f"bundle {result.bundle} is not in the output folder"
    if result.check_ok is False:
        return f"bundle check {result.check_text}"
    return None


def check_coverage(
    expected: Sequence[str],
    results: Mapping[str, LegResult],
    bundles_present: Set[str],
    allow_missing: Set[str] = frozenset(),
) -> Coverage:
    """Which expected legs can be published; ``bundles_present``: bundle paths that exist."""
    present: list[LegResult] = []
    missing: list[tuple[str, str]] = []
    allowed: list[tuple[str, str]] = []
    for leg in expected:
        why = _why_missing(results.get(leg), bundles_present)
        if why is None:
            present.append(results[leg])
        elif leg in allow_missing:
            allowed.append((leg, why))
        else:
            missing.append((leg, why))
    unexpected = tuple(sorted(set(results) - set(expected)))
    return Coverage(
        present=tuple(present), missing=tuple(missing), allowed_missing=tuple(allowed), unexpected=unexpected
    )


def built_tag(results: Sequence[LegResult]) -> str:
    """The one llama.cpp tag every published leg built; PublishError when they differ or none says."""
    tags = {str(r.source.get("tag")) for r in results if r.source.get("tag")}
    if not tags:
        raise PublishError("no record names its source tag: pass --tag TAG")
    if len(tags) > 1:
        raise PublishError(
            f"the legs built different tags ({', '.join(sorted(tags))}): one release holds one tag"
        )
    return tags.pop()


def left_out(all_legs: Sequence[str], coverage: Coverage) -> tuple[str, ...]:
    """The legs of matrix.toml the release will hold no bundle of (not built by the run, or allowed missing).

    A release missing any is partial: published as a prerelease, never marked latest, and not
    counted as the tag's release by ``release-exists``, so the scheduled run still builds the tag
    and completes it.
    """
    present = {r.leg for r in coverage.present}
    return tuple(leg for leg in all_legs if leg not in present)


def refuse_unplanned_partial(
    expected: Sequence[str], all_legs: Sequence[str], *, partial_allowed: bool
) -> None:
    """A run that expects only some legs of matrix.toml publishes only when asked to (``--partial``).

    Otherwise a manual run of some legs would stand as the tag's release (and, as latest, be what
    users download), and the scheduled run would skip the tag as released.
    """
    unbuilt = [leg for leg in all_legs if leg not in expected]
    if unbuilt and not partial_allowed:
        raise PublishError(
            f"the run expects {len(expected)} of the {len(all_legs)} legs of matrix.toml (not {', '.join(unbuilt)}): "
            "pass --partial to publish a partial release (a prerelease, never latest), or build every leg"
        )


def replaces_assets(
    *, asked: bool, forced: bool, release_is_prerelease: bool, partial: Sequence[str]
) -> bool:
    """Whether assets that differ from this run's are overwritten.

    When asked (``--replace``), on a forced rebuild of a published tag (the workflow's ``force``),
    and when a full run completes a partial release (its SHA256SUMS lists fewer bundles).
    """
    completing = release_is_prerelease and not partial
    return asked or forced or completing


def built_commit(results: Sequence[LegResult]) -> str | None:
    """The one full llama.cpp commit every published leg built, or None (absent, short, or legs disagree)."""
    commits = {str(r.source.get("commit")) for r in results}
    if len(commits) != 1:
        return None
    commit = commits.pop()
    return commit if COMMIT_SHA.match(commit) else None


# --------------------------------------------------------------------------
# Files of the release


def sha256sums_text(assets: Sequence[tuple[str, str]]) -> str:
    """``sha256sum`` format (two spaces, by name) for (name, sha256) pairs; ``sha256sum -c`` reads it."""
    for name, digest in assets:
        if not SHA256_HEX.match(digest) or "\n" in name or "/" in name:
            raise PublishError(f"{SUMS_NAME}: bad entry {name!r} {digest!r}")
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(assets))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def release_notes(tag: str, coverage: Coverage, partial: Sequence[str] = ()) -> str:
    """The release body: source (tag, commit, mix pull requests), then one row per leg.

    ``partial``: the matrix's legs the release lacks (it is then a prerelease, and says so).
    """
    source: Mapping[str, Any] = coverage.present[0].source if coverage.present else {}
    commit = source.get("commit")
    lines = [f"llama.cpp prebuilt bundles for `{tag}`.", ""]
    if partial:
        lines += [f"**Partial release** (a prerelease): no bundle for {', '.join(f'`{leg}`' for leg in partial)}. "
                  "A full run of every leg completes it.", ""]  # fmt: skip
    base = source.get("base_tag")
    lines.append(f"- llama.cpp tag: `{base or tag}`" + (f", commit `{commit}`" if commit else ""))
    base_commit = source.get("base_commit")
    if base_commit and base_commit != commit:
        lines.append(f"- base commit: `{base_commit}`")
    mix = source.get("mix") or []
    if mix:
        lines.append("- merged pull requests (in order):")
        for pin in mix:
            if isinstance(pin, Mapping):
                lines.append(f"  - {pin.get('repo')}#{pin.get('number')} at `{pin.get('sha')}`")
    else:
        lines.append("- merged pull requests: none")
    lines += ["", "| leg | bundle | toolchain | ccache hit rate | wall time | bundle check |",
              "|---|---|---|---:|---:|---|"]  # fmt: skip
    for r in coverage.present:
        rate = f"{r.hit_rate:.1%}" if r.hit_rate is not None else "-"
        lines.append(
            f"| {_cell(r.leg)} | `{_cell(r.bundle_file_name or '-')}` | {_cell(r.toolchain)} | {rate} "
            f"| {duration_text(r.wall_seconds)} | {_cell(r.check_text)} |"
        )
    for leg, why in coverage.allowed_missing:
        lines.append(f"| {_cell(leg)} | missing | - | - | - | {_cell(why)} |")
    lines += ["", f"Verify a download with `sha256sum -c {SUMS_NAME} --ignore-missing`."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Uploads


@dataclass(frozen=True, kw_only=True)
class LocalAsset:
    name: str
    sha256: str
    size: int
    # Where the bytes are (opaque here: the command opens it).
    path: str


@dataclass(frozen=True, kw_only=True)
class RemoteAsset:
    id: int
    name: str
    size: int
    # "uploaded", or "starter" for an upload that never finished.
    state: str = "uploaded"
    # None when the server gives no digest (older GitHub Enterprise).
    sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class AssetStep:
    action: Action
    name: str
    local: LocalAsset
    remote: RemoteAsset | None = None
    reason: str = ""
    # A staged copy of exactly these bytes already on the release (an interrupted run's): renamed, not sent again.
    staged: RemoteAsset | None = None


@dataclass(frozen=True, kw_only=True)
class UploadPlan:
    steps: tuple[AssetStep, ...]
    # Assets on the release that this run does not have: left alone.
    extra: tuple[str, ...] = ()
    # Staged copies no step can use (other bytes, half uploaded): deleted before anything else.
    leftovers: tuple[RemoteAsset, ...] = ()
    # Previous copies an interrupted replacement set aside: deleted once the release is new.
    retired: tuple[RemoteAsset, ...] = ()

    @property
    def conflicts(self) -> tuple[AssetStep, ...]:
        return tuple(s for s in self.steps if s.action == "conflict")

    def count(self, action: Action) -> int:
        return sum(1 for s in self.steps if s.action == action)


def _compare(local: LocalAsset, remote: RemoteAsset, replace: bool) -> AssetStep:
    if remote.state != "uploaded":
        return AssetStep(action="reupload", name=local.name, local=local, remote=remote,
                         reason=f"left {remote.state!r} by an interrupted upload")  # fmt: skip
    if remote.sha256 is not None:
        same = remote.sha256 == local.sha256
        differs = f"sha256 {remote.sha256[:12]}... there, {local.sha256[:12]}... here"
    else:
        # No digest from the server: the size is all there is to compare.
        same = remote.size == local.size
        differs = f"{remote.size} bytes there, {local.size} here (the server gives no digest)"
    if same:
        return AssetStep(action="keep", name=local.name, local=local, remote=remote, reason="same sha256"
                         if remote.sha256 else "same size (the server gives no digest)")  # fmt: skip
    action: Action = "replace" if replace else "conflict"
    return AssetStep(action=action, name=local.name, local=local, remote=remote, reason=differs)


STAGED_MARK = ".pending-"
RETIRED_MARK = ".previous-"
_STAGED_DIGITS = 16


def staged_name(name: str, sha256: str) -> str:
    """The name new bytes are uploaded under before they replace (or become) ``name``."""
    return f"{name}{STAGED_MARK}{sha256[:_STAGED_DIGITS]}"


def retired_name(name: str, asset_id: int) -> str:
    """The name a replaced asset steps aside to until the whole release is new."""
    return f"{name}{RETIRED_MARK}{asset_id}"


def _marked(name: str, mark: str) -> bool:
    head, found, tail = name.rpartition(mark)
    return bool(found and head and tail.isalnum())


def _ready(asset: LocalAsset, copy: RemoteAsset) -> bool:
    """Is ``copy`` a complete staged upload of ``asset``'s bytes (as far as the server says)?"""
    return (copy.name == staged_name(asset.name, asset.sha256) and copy.state == "uploaded"
            and copy.size == asset.size and copy.sha256 in (None, asset.sha256))  # fmt: skip


def plan_uploads(
    local: Sequence[LocalAsset], remote: Sequence[RemoteAsset], *, replace: bool = False
) -> UploadPlan:
    """One step per local asset, in order, with ``SHA256SUMS`` last (it vouches for the rest)."""
    staged = [r for r in remote if _marked(r.name, STAGED_MARK)]
    retired = tuple(r for r in remote if _marked(r.name, RETIRED_MARK))
    by_name = {r.name: r for r in remote if r not in staged and r not in retired}
    ordered = sorted(local, key=lambda a: (a.name == SUMS_NAME, a.name))
    steps = []
    used: set[int] = set()
    for asset in ordered:
        there = by_name.get(asset.name)
        if there is None:
            step = AssetStep(action="upload", name=asset.name, local=asset, reason="not on the release")
        else:
            step = _compare(asset, there, replace)
        copy = next((c for c in staged if _ready(asset, c)), None)
        if copy is not None and step.action not in ("keep", "conflict"):
            used.add(copy.id)
            step = AssetStep(action=step.action, name=step.name, local=asset, remote=step.remote,
                             reason=f"{step.reason}; staged as {copy.name} already", staged=copy)  # fmt: skip
        steps.append(step)
    extra = tuple(sorted(set(by_name) - {a.name for a in local}))
    leftovers = tuple(c for c in staged if c.id not in used)
    return UploadPlan(steps=tuple(steps), extra=extra, leftovers=leftovers, retired=retired)


def parse_digest(value: Any) -> str | None:
    """GitHub's asset ``digest`` (``sha256:<hex>``) -> the hex, else None."""
    if isinstance(value, str) and value.startswith("sha256:") and SHA256_HEX.match(value[7:]):
        return value[7:]
    return None
