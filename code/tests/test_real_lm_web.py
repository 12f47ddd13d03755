"""SmolLM2 for the static site (mhacourse.real_lm.web): the 4-bit blocks the
exported graph hands to onnxruntime's MatMulNBits stand for the numbers
load_weights dequantizes, and build refuses bad arguments in one line.
(The page's parity with the package: tests/test_explorer_smollm2.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from mhacourse import InputError
from mhacourse.real_lm import model_file, web


@pytest.fixture(scope="module")
def reader():
    gguf = pytest.importorskip("gguf")
    return gguf, gguf.GGUFReader(model_file())


def unpack4(packed: np.ndarray) -> np.ndarray:
    """MatMulNBits' 4-bit layout back to weights in order: byte i holds
    weights 2i (low nibble) and 2i + 1 (high nibble)."""
    q = np.empty(packed.shape[:-1] + (2 * packed.shape[-1],), np.uint8)
    q[..., 0::2], q[..., 1::2] = packed & 0x0F, packed >> 4
    return q


@pytest.mark.parametrize("name", ["blk.0.attn_q.weight", "blk.7.attn_k.weight",
                                  "blk.18.ffn_down.weight", "blk.29.attn_output.weight"])
def test_q4_1_blocks_are_the_dequantized_weights(reader, name):
    gguf, r = reader
    t = next(t for t in r.tensors if t.name == name)
    n, k = int(t.shape[1]), int(t.shape[0])  # GGUF lists (in, out)
    packed, d, m = web._q4_1_blocks(t.data, n, k)
    d32, m32 = d.astype(np.float32), m.astype(np.float32)
    zp = -m32 / d32  # what the graph computes (Cast, Div, Neg)
    w = (d32[:, None] * (unpack4(packed).reshape(-1, 32) - zp[:, None])).reshape(n, k)
    want = gguf.quants.dequantize(t.data, t.tensor_type).reshape(n, k)
    assert np.abs(w - want).max() <= 4e-7 * np.abs(want).max()


def test_q8_0_embedding_is_the_dequantized_embedding(reader):
    gguf, r = reader
    t = next(t for t in r.tensors if t.name == "token_embd.weight")
    q, d = web._q8_0_blocks(t.data, 49152, 576)
    w = ((q[:64].astype(np.float32) - 128) * d[: 64 * 18].astype(np.float32).reshape(64, 18, 1))
    want = gguf.quants.dequantize(t.data[:64], t.tensor_type)
    assert np.array_equal(w.reshape(64, 576), want)


@pytest.mark.parametrize("out, log", [(3, print), (b"x", print), ("", print), ("x", 5)])
def test_build_refuses_bad_arguments_in_one_line(out, log):
    with pytest.raises(InputError) as e:
        web.build(out, log)
    assert "\n" not in str(e.value)
