"""The benchmarks: ``python -m scripts.bench`` (``nox -s bench``) and the focused ones beside it.

``__main__`` runs the benchmark on a generated project (``project``) and, unless ``--quick``, on the
real llama.cpp tree (``real_tree``); both report the pipeline's per-phase wall times (``phases``) and
the run's idle verdict (``idle``). ``markdown`` renders the saved results into docs/benchmarks.md;
``glslc_hit_cost``, ``shader_cache_figures`` and ``shader_pipeline_share`` measure the glslc cache
and the vulkan leg's shader pipeline (docs/benchmarks.md, docs/caches.md).
"""
