"""Resolving a run once (ROCm builds per leg, the source) and the resolution file that carries it."""
