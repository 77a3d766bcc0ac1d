"""The smoke run's tiny model: written with struct, the bytes llama.cpp's own GGUF writer makes of the same tensors."""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from pathlib import Path

import pytest


def test_the_tiny_model_is_byte_for_byte_what_gguf_writes_for_the_same_tensors(tmp_path: Path) -> None:
    import gguf
    import numpy as np

    from pipeline.bundle import tiny_model as tm

    ours = tm.write_tiny_llama(tmp_path / "ours.gguf").read_bytes()
    writer = gguf.GGUFWriter(str(tmp_path / "gguf.gguf"), tm.ARCH)
    writer.add_context_length(tm.N_CTX)
    writer.add_embedding_length(tm.N_EMBD)
    writer.add_block_count(tm.N_LAYER)
    writer.add_feed_forward_length(tm.N_FF)
    writer.add_head_count(tm.N_HEAD)
    writer.add_head_count_kv(tm.N_HEAD)
    writer.add_rope_dimension_count(tm.N_EMBD // tm.N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    tokens, scores, types = tm.vocabulary()
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    for name, shape, values in tm.tensors():
        writer.add_tensor(name, np.array(values, dtype=np.float32).reshape(shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert ours == (tmp_path / "gguf.gguf").read_bytes()
    # And gguf's reader reads back what the smoke run relies on: a llama with its weights in range.
    reader = gguf.GGUFReader(tmp_path / "ours.gguf")
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight")
    assert [int(d) for d in embd.shape] == [tm.N_EMBD, len(tokens)]
    assert 0.015 < float(np.std(embd.data)) < 0.025 and float(np.max(np.abs(embd.data))) <= tm.WEIGHT_BOUND


class _Refuse(importlib.abc.MetaPathFinder):
    """Makes gguf and numpy unimportable, as on an install without them."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in ("gguf", "numpy"):
            raise ImportError(f"{name} refused by the test")


def test_the_tiny_model_is_written_without_gguf_or_numpy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What made the check's Python slow on a warm build: gguf's import, and numpy's with it.
    for name in [
        m
        for m in sys.modules
        if m.partition(".")[0] in ("gguf", "numpy") or m == "pipeline.bundle.tiny_model"
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_Refuse(), *sys.meta_path])
    tm = importlib.import_module("pipeline.bundle.tiny_model")
    assert tm.write_tiny_llama(tmp_path / "m.gguf").stat().st_size == 471_936
    with pytest.raises(ImportError):
        importlib.import_module("numpy")
