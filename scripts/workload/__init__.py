"""What the tests, the benchmarks and the GPU check build, declared once: each imports it from here.

The real llama.cpp tree (``llama_sdist``), the one reduction that makes a shipped leg's build of it fit
CI (``reduction``, with ``llama_programs.cmake``), and Debian 13's Vulkan headers and loader as an SDK
(``trixie_vulkan``). Standard library only: the GPU check imports them on a machine without the
pipeline's dependencies.
"""
