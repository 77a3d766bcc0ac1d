"""What the tests, the benchmarks and the GPU check build, declared once: each imports it from here.

The real llama.cpp tree (``llama_sdist``), the one reduction that makes a shipped leg's build of it fit
CI (``reduction``, with ``llama_programs.cmake``), a reduced leg's matrix.toml (``leg_matrix``), Debian
13's Vulkan headers and loader as an SDK (``trixie_vulkan``), and the vulkan leg built on them
(``vulkan_leg``: its matrix, SDK and build line). Standard library only: the GPU check imports them on a machine without the
pipeline's dependencies.
"""
