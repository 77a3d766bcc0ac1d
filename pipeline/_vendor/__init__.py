"""Small self-contained modules vendored into the pipeline.

Each module here is stdlib-only and imports nothing from the rest of
``pipeline``, so it can be copied elsewhere (or replaced by an upstream
release) without dragging the pipeline along. Each has its own unit tests.
"""
