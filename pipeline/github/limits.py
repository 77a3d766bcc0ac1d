"""GitHub's limits that the pipeline plans by (pure): the REST API's page size, a release asset's size."""

from __future__ import annotations

# The largest page GitHub's REST API serves (per_page).
GITHUB_PER_PAGE = 100

# "Each file included in a release must be under 2 GiB" (GitHub's docs, "About releases", storage and
# bandwidth quotas). An upload over it is refused by the server, hours into a night: checked before.
RELEASE_ASSET_LIMIT_BYTES = 2 * 1024**3

# The share of that limit at which a bundle is worth a warning: TheRock's libraries grow with each family.
RELEASE_ASSET_WARN_FRACTION = 0.8
