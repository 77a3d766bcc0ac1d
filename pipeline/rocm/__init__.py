"""TheRock (AMD's ROCm builds): index client, version model and selection policies.

- :mod:`pipeline.rocm.versions`: tarball names and version ordering (pure).
- :mod:`pipeline.rocm.index`: reading the index, HTML or S3 XML (I/O edge + pure parsers).
- :mod:`pipeline.rocm.policy`: weekly-stable / weekly / latest / explicit selection (pure; ``now`` is a parameter).
"""
