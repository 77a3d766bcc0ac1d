"""Nightly build pipeline for llama.cpp prebuilt bundles."""

__version__ = "0.1.0"
