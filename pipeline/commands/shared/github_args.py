"""The GitHub repository and API a command talks to, and the legs a run should have built."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pipeline.inputs import settings as S

if TYPE_CHECKING:
    from pipeline.inputs.run_inputs import RunInputs


def add_github_options(p: argparse.ArgumentParser) -> None:
    """--repo and --api-url (prune, publish, alert, release-exists)."""
    S.add_flag(p, S.GITHUB_REPOSITORY)
    S.add_flag(p, S.GITHUB_API_URL)


def github_target(args: argparse.Namespace, inputs: RunInputs) -> tuple[str | None, str]:
    """The repository and API root: flag, else environment, else (for the API) the public one."""
    repo = S.pick(S.GITHUB_REPOSITORY, flag=args.repo, environ=inputs.environ).value
    api_url = S.pick(S.GITHUB_API_URL, flag=args.api_url, environ=inputs.environ).value
    return repo, api_url


def expected_legs(args: argparse.Namespace, inputs: RunInputs) -> list[str]:
    """The legs a run should have built: --legs, else its variable, else every leg of the matrix."""
    from pipeline.errors import UsageError

    all_legs = list(inputs.require_matrix().legs)
    legs = list(S.pick(S.LEGS, flag=args.legs, environ=inputs.environ).value)
    if not legs:
        return all_legs
    if unknown := [leg for leg in legs if leg not in all_legs]:
        raise UsageError(f"--legs: no leg {', '.join(unknown)} in the matrix (legs: {', '.join(all_legs)})")
    return legs
