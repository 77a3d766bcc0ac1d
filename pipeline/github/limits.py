"""Limits of GitHub's REST API that more than one client pages by (pure)."""

from __future__ import annotations

# The largest page GitHub's REST API serves (per_page).
GITHUB_PER_PAGE = 100
