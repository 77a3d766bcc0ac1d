"""A tiny random-weight llama model in GGUF, for the smoke run's forward pass.

Written with ``gguf``, llama.cpp's own Python writer, so its layout is the
one the bundle's ``libllama`` reads. It is small (a few hundred KB) and made
from a fixed seed, so every run writes the same bytes and the same
generation. Its vocabulary is a SentencePiece ("llama") one: the three
special tokens, the 256 byte tokens (any text tokenizes through them) and a
few words.
"""

from __future__ import annotations

from pathlib import Path

ARCH = "llama"
SEED = 20
N_EMBD = 64
N_HEAD = 4
N_LAYER = 2
N_FF = 128
N_CTX = 256
WORDS = ("▁Hello", "▁world", "▁the", "▁bundle", "▁works")
# SentencePiece token types, as llama.cpp reads them.
_NORMAL, _CONTROL, _UNKNOWN, _BYTE = 1, 3, 2, 6


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and types: <unk>, <s>, </s>, the 256 byte tokens, then :data:`WORDS`."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + list(WORDS)
    types = [_UNKNOWN, _CONTROL, _CONTROL] + [_BYTE] * 256 + [_NORMAL] * len(WORDS)
    scores = [0.0] * (3 + 256) + [-float(i) for i in range(len(WORDS))]
    return tokens, scores, types


def write_tiny_llama(path: Path) -> Path:
    """Write the model to ``path`` (same bytes on every call) and return it."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(SEED)
    tokens, scores, types = vocabulary()

    def weights(*shape: int) -> np.ndarray:
        # Small values keep the activations finite through the layers.
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), ARCH)
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    vocab = len(tokens)
    # numpy shapes are ggml's reversed: token_embd is ne = [n_embd, n_vocab].
    writer.add_tensor("token_embd.weight", weights(vocab, N_EMBD))
    for i in range(N_LAYER):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", weights(N_EMBD, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weights(N_FF, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weights(N_FF, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weights(N_EMBD, N_FF))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("output.weight", weights(vocab, N_EMBD))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
