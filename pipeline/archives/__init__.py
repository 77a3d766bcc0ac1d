"""Archives: deterministic tar.gz/zip writing, fast packing, and safe extraction."""
