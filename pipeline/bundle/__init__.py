"""Bundles: staging, runtime closure, names, check, smoke test and comparison."""
