"""What an issue plan decided (alert's, deadman's), done through the releases client."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.release.releases_client import ReleasesClient


def apply_issue_action(
    client: ReleasesClient, action: str, *, issue: int | None, title: str, body: str, label: str
) -> None:
    """Do what an issue plan decided (alert's, deadman's): open one, comment on it, or comment and close it."""
    if action == "open":
        print(f"opened #{client.create_issue(title, body, label)}")
    elif action == "comment" and issue:
        client.comment(issue, body)
    elif action == "close" and issue:
        client.comment(issue, body)
        client.close_issue(issue)
