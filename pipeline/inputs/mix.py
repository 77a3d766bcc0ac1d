"""The mix set: pull requests pinned to exact commits and merged onto a base tag.

Everything here is pure. A mix build must be a function of its inputs: the
same base commit and the same pins give the same merge commits on every
machine and every run, because llama.cpp bakes the commit's short SHA into
its build info (a new merge commit per run means a different bundle and a
cache miss per run).

The mix hash, exactly: the UTF-8 bytes of the pins' ``repo#number:sha`` lines
in listed order, joined with a single ``\\n`` (no trailing newline), hashed
with SHA-256; the tag takes the first 7 hex digits of it:
``<base>-mix-<hash7>``. Reordering the pins changes the hash (the merge order
changes the result).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pipeline.errors import SourceError
from pipeline.inputs.matrix import MixPin
from pipeline.names import COMMIT_SHA, GITHUB_REPO

MIX_HASH_DIGITS = 7
# A fixed identity for the synthetic merge commits: who merged must not vary
# with the machine (a user.name in ~/.gitconfig would change the SHA).
MIX_AUTHOR_NAME = "llama-pipeline"
MIX_AUTHOR_EMAIL = "mix@llama-pipeline.invalid"


def mix_lines(pins: Sequence[MixPin]) -> str:
    """The hashed text: ``repo#number:sha`` lines in listed order, joined by ``\\n``."""
    return "\n".join(pin.line for pin in pins)


def mix_hash(pins: Sequence[MixPin]) -> str:
    """Full SHA-256 hex digest of :func:`mix_lines`."""
    return hashlib.sha256(mix_lines(pins).encode("utf-8")).hexdigest()


def mix_tag(base_tag: str, pins: Sequence[MixPin]) -> str:
    """``<base>-mix-<hash7>`` for a mix set, the base tag itself without one."""
    if not pins:
        return base_tag
    return f"{base_tag}-mix-{mix_hash(pins)[:MIX_HASH_DIGITS]}"


def check_pin(pin: MixPin, where: str) -> None:
    """Raise SourceError unless ``pin`` names an ``owner/name`` repo, a PR number and a full SHA."""
    if not GITHUB_REPO.match(pin.repo):
        raise SourceError(f"{where}: malformed mix pin repo {pin.repo!r}: expected 'owner/name'")
    if isinstance(pin.number, bool) or not isinstance(pin.number, int) or pin.number < 1:
        raise SourceError(
            f"{where}: malformed mix pin number {pin.number!r} for {pin.repo}: expected a PR number >= 1"
        )
    if not COMMIT_SHA.match(pin.sha):
        raise SourceError(
            f"{where}: malformed mix pin {pin.repo}#{pin.number}: sha {pin.sha!r} is not 40 lowercase hex digits"
        )


def check_pins(pins: Sequence[MixPin], where: str) -> None:
    """Check every pin, and that no pull request is listed twice."""
    seen: set[tuple[str, int]] = set()
    for pin in pins:
        check_pin(pin, where)
        if (pin.repo, pin.number) in seen:
            raise SourceError(f"{where}: mix pin {pin.repo}#{pin.number} is listed twice")
        seen.add((pin.repo, pin.number))


def merge_message(pin: MixPin, base_tag: str) -> str:
    """The commit message of the merge of ``pin``: inputs only."""
    return f"Merge {pin.repo}#{pin.number} at {pin.sha} into {base_tag} (llama-pipeline mix)"


def merge_identity_env(base_commit_time: int, index: int) -> dict[str, str]:
    """Author and committer of the ``index``-th (0-based) merge, dated from the base commit.

    The date is the base commit's committer time plus ``index + 1`` seconds,
    in UTC: derived from the inputs, strictly increasing along the mix, and
    never the wall clock.
    """
    date = f"{base_commit_time + index + 1} +0000"
    return {
        "GIT_AUTHOR_NAME": MIX_AUTHOR_NAME,
        "GIT_AUTHOR_EMAIL": MIX_AUTHOR_EMAIL,
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": MIX_AUTHOR_NAME,
        "GIT_COMMITTER_EMAIL": MIX_AUTHOR_EMAIL,
        "GIT_COMMITTER_DATE": date,
    }


def pin_to_json(pin: MixPin) -> dict[str, object]:
    return {"repo": pin.repo, "number": pin.number, "sha": pin.sha}


def pin_from_json(data: object, where: str) -> MixPin:
    """A pin from its JSON object; SourceError naming ``where`` when malformed."""
    if not isinstance(data, dict) or set(data) != {"repo", "number", "sha"}:
        raise SourceError(f"{where}: malformed mix pin {data!r}: expected an object with repo, number, sha")
    repo, number, sha = data["repo"], data["number"], data["sha"]
    if not isinstance(repo, str) or not isinstance(sha, str) or not isinstance(number, int):
        raise SourceError(f"{where}: malformed mix pin {data!r}: repo and sha are strings, number an integer")
    pin = MixPin(repo=repo, number=number, sha=sha)
    check_pin(pin, where)
    return pin
