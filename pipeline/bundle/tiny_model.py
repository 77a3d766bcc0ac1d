"""A tiny random-weight llama model in GGUF, for the smoke run's forward pass.

Written here with ``struct`` (GGUF version 3: header, key-value pairs,
tensor infos, then the F32 tensors, each padded to 32 bytes), byte for byte
what ``gguf``, llama.cpp's own Python writer, writes for the same
tensors: tests/unit/test_tiny_model.py writes both and compares them. Not
with ``gguf`` itself because its import (numpy with it) cost more CPU than
the whole rest of the check's Python on a warm build (docs/benchmarks.md).

It is small (460 KB) and made from a fixed seed, so every run writes the
same bytes and the same generation. Its vocabulary is a SentencePiece
("llama") one: the three special tokens, the 256 byte tokens (any text
tokenizes through them) and a few words.
"""

from __future__ import annotations

import functools
import math
import random
import struct
from collections.abc import Iterator
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
# Small values keep the activations finite through the layers: uniform with a standard deviation of 0.02.
WEIGHT_BOUND = 0.02 * math.sqrt(3)

# GGUF (llama.cpp's gguf-py constants): the magic "GGUF", version 3, data aligned to 32 bytes.
_MAGIC = 0x46554747
_VERSION = 3
_ALIGNMENT = 32
# GGUFValueType
_UINT32, _INT32, _FLOAT32, _STRING, _ARRAY = 4, 5, 6, 8, 9
# GGMLQuantizationType.F32; LlamaFileType.ALL_F32
_F32 = 0
_ALL_F32 = 0


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and types: <unk>, <s>, </s>, the 256 byte tokens, then :data:`WORDS`."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + list(WORDS)
    types = [_UNKNOWN, _CONTROL, _CONTROL] + [_BYTE] * 256 + [_NORMAL] * len(WORDS)
    scores = [0.0] * (3 + 256) + [-float(i) for i in range(len(WORDS))]
    return tokens, scores, types


def tensors() -> list[tuple[str, tuple[int, ...], list[float]]]:
    """Every tensor: name, shape (numpy's order, ggml's reversed) and its values, from :data:`SEED`."""
    rng = random.Random(SEED)
    vocab = len(vocabulary()[0])
    scale = 2 * WEIGHT_BOUND / 2**32

    def weights(name: str, *shape: int) -> tuple[str, tuple[int, ...], list[float]]:
        n = math.prod(shape)
        raw = struct.unpack(f"<{n}I", rng.randbytes(4 * n))
        return name, shape, [u * scale - WEIGHT_BOUND for u in raw]

    def ones(name: str) -> tuple[str, tuple[int, ...], list[float]]:
        return name, (N_EMBD,), [1.0] * N_EMBD

    # token_embd is ne = [n_embd, n_vocab] in ggml's order.
    named = [weights("token_embd.weight", vocab, N_EMBD)]
    for i in range(N_LAYER):
        named.append(ones(f"blk.{i}.attn_norm.weight"))
        named += [
            weights(f"blk.{i}.{name}.weight", N_EMBD, N_EMBD)
            for name in ("attn_q", "attn_k", "attn_v", "attn_output")
        ]
        named += [
            ones(f"blk.{i}.ffn_norm.weight"),
            weights(f"blk.{i}.ffn_gate.weight", N_FF, N_EMBD),
            weights(f"blk.{i}.ffn_up.weight", N_FF, N_EMBD),
            weights(f"blk.{i}.ffn_down.weight", N_EMBD, N_FF),
        ]
    return [*named, ones("output_norm.weight"), weights("output.weight", vocab, N_EMBD)]


def metadata() -> list[tuple[str, int, object]]:
    """The key-value pairs in gguf's order: key, GGUF value type, value (an array is (item type, items))."""
    tokens, scores, types = vocabulary()
    return [
        ("general.architecture", _STRING, ARCH),
        (f"{ARCH}.context_length", _UINT32, N_CTX),
        (f"{ARCH}.embedding_length", _UINT32, N_EMBD),
        (f"{ARCH}.block_count", _UINT32, N_LAYER),
        (f"{ARCH}.feed_forward_length", _UINT32, N_FF),
        (f"{ARCH}.attention.head_count", _UINT32, N_HEAD),
        (f"{ARCH}.attention.head_count_kv", _UINT32, N_HEAD),
        (f"{ARCH}.rope.dimension_count", _UINT32, N_EMBD // N_HEAD),
        (f"{ARCH}.attention.layer_norm_rms_epsilon", _FLOAT32, 1e-5),
        ("general.file_type", _UINT32, _ALL_F32),
        ("tokenizer.ggml.model", _STRING, "llama"),
        ("tokenizer.ggml.tokens", _ARRAY, (_STRING, tokens)),
        ("tokenizer.ggml.scores", _ARRAY, (_FLOAT32, scores)),
        ("tokenizer.ggml.token_type", _ARRAY, (_INT32, types)),
        ("tokenizer.ggml.unknown_token_id", _UINT32, 0),
        ("tokenizer.ggml.bos_token_id", _UINT32, 1),
        ("tokenizer.ggml.eos_token_id", _UINT32, 2),
    ]


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


_SCALAR = {_UINT32: "<I", _INT32: "<i", _FLOAT32: "<f"}


def _value(vtype: int, value: object) -> Iterator[bytes]:
    if vtype == _STRING:
        assert isinstance(value, str)
        yield _string(value)
    elif vtype == _ARRAY:
        assert isinstance(value, tuple)
        item_type, items = value
        yield struct.pack("<IQ", item_type, len(items))
        if item_type == _STRING:
            yield from (_string(item) for item in items)
        else:
            yield struct.pack(f"<{len(items)}{_SCALAR[item_type][1]}", *items)
    else:
        yield struct.pack(_SCALAR[vtype], value)


def _pad(n: int) -> int:
    return -n % _ALIGNMENT


@functools.cache
def model_bytes() -> bytes:
    """The whole GGUF file, made once per process (two checks of one run use it)."""
    kvs, named = metadata(), tensors()
    parts = [struct.pack("<IIQQ", _MAGIC, _VERSION, len(named), len(kvs))]
    for key, vtype, value in kvs:
        parts += [_string(key), struct.pack("<I", vtype), *_value(vtype, value)]
    offset = 0
    for name, shape, values in named:
        # Dimensions in ggml's order (numpy's reversed), then the type and the offset in the data.
        parts += [
            _string(name),
            struct.pack(f"<I{len(shape)}QIQ", len(shape), *reversed(shape), _F32, offset),
        ]
        offset += 4 * len(values) + _pad(4 * len(values))
    head = b"".join(parts)
    data = [head, bytes(_pad(len(head)))]
    for _, _, values in named:
        data += [struct.pack(f"<{len(values)}f", *values), bytes(_pad(4 * len(values)))]
    return b"".join(data)


def write_tiny_llama(path: Path) -> Path:
    """Write the model to ``path`` (same bytes on every call) and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model_bytes())
    return path
