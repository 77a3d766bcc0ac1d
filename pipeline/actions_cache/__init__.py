"""GitHub Actions caches: keys, listed entries, the budget and the pruner."""
