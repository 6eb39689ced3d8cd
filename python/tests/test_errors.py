"""Bad inputs give Python exceptions naming the argument, never a crash: wrong dtype (TypeError),
shape, device, layout, read-only or strided where contiguity is needed, freed storage (ValueError),
invalid configuration (posenc.ConfigError, a ValueError naming the parameter)."""

import numpy as np
import pytest
import torch

import posenc
import posenc.torch as pt

B, S, H, D = 1, 8, 2, 16


def qkv(dtype=np.float32):
    return [np.random.randn(B, S, H, D).astype(dtype) for _ in range(3)]


def test_wrong_dtype_names_the_argument():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="q: expected float32"):
        posenc.attention(q.astype(np.float64), k, v)
    with pytest.raises(TypeError, match="k: expected float32 or bfloat16"):
        posenc.attention(q, k.astype(np.int32), v.astype(np.int32))
    with pytest.raises(TypeError, match="k, v: expected one dtype"):
        posenc.attention(q, k, v.astype(np.float16))
    with pytest.raises(TypeError, match="k: expected float32"):
        pt.attention(torch.zeros(B, S, H, D), torch.zeros(B, S, H, D, dtype=torch.float64), torch.zeros(B, S, H, D))
    with pytest.raises(TypeError, match="q: expected a numpy array or a torch tensor"):
        posenc.attention([[1.0]], k, v)


def test_wrong_shape():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="q: expected 4 dimensions"):
        posenc.attention(q[0], k, v)
    with pytest.raises(posenc.ShapeError, match="v"):
        posenc.attention(q, k, v[:, :3])
    with pytest.raises(posenc.ShapeError, match="encoder.head_dim"):
        posenc.attention(q, k, v, posenc.RoPE(head_dim=8))
    with pytest.raises(posenc.ShapeError, match="encoder.num_heads"):
        posenc.attention(q, k, v, posenc.ALiBi(num_heads=3))
    with pytest.raises(ValueError, match="layout"):
        posenc.attention(q, k, v, layout="bsdh")


def test_non_cpu_and_non_strided_tensors():
    meta = torch.empty(B, S, H, D, device="meta")
    with pytest.raises(ValueError, match="q: a tensor on device 'meta'"):
        posenc.attention(meta, torch.zeros(B, S, H, D), torch.zeros(B, S, H, D))
    with pytest.raises(ValueError, match="q: a tensor on device 'meta'"):
        pt.attention(meta, meta, meta)
    sparse = torch.zeros(B, S, H, D).to_sparse()
    with pytest.raises(ValueError, match="q: a torch.sparse_coo tensor"):
        pt.attention(sparse, sparse, sparse)


def test_freed_tensor():
    q = torch.zeros(B, S, H, D)
    q.storage().resize_(0)
    with pytest.raises(ValueError, match="q: cannot be read"):
        posenc.attention(q, torch.zeros(B, S, H, D), torch.zeros(B, S, H, D))


def test_read_only_output_and_strided_lse():
    q, k, v = qkv()
    out = np.zeros_like(q)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="out: a read-only array"):
        posenc.attention(q, k, v, out=out)
    lse = np.zeros(2 * B * H * S, np.float32)[::2]
    with pytest.raises(ValueError, match="lse: must be contiguous"):
        posenc._posenc._attention(q, k, v, np.zeros_like(q), None, lse)
    q64, k64 = (np.random.randn(B, S, H, 128).astype(np.float32) for _ in range(2))
    blocks = posenc.quantize_q8_0(k64)
    with pytest.raises(ValueError, match="q8_0 blocks must be contiguous"):
        posenc.attention(q64, blocks[..., ::2, :], blocks[..., ::2, :])
    with pytest.raises(ValueError, match="x: must be contiguous"):
        posenc.quantize_q8_0(k64[:, ::2])


def test_bad_options_and_encoders():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="unexpected keyword argument 'causall'"):
        posenc._posenc._attention(q, k, v, np.zeros_like(q), None, causall=True)
    with pytest.raises(TypeError, match="encoder: expected a posenc encoder"):
        posenc.attention(q, k, v, "rope")
    with pytest.raises(posenc.ConfigError, match="attention.sliding_window"):
        posenc.attention(q, k, v, window=0)
    with pytest.raises(posenc.ShapeError, match="attention.sinks"):
        posenc.attention(q, k, v, sinks=np.zeros(3))
    with pytest.raises(TypeError, match="combine: at most one"):
        posenc.combine(posenc.ALiBi(num_heads=H), posenc.T5Bias(np.zeros((32, H))))
    with pytest.raises(ValueError, match="return_lse"):
        pt.attention(*(torch.zeros(B, S, H, D, dtype=torch.float64) for _ in range(3)), return_lse=True)


def test_config_errors_name_the_parameter():
    with pytest.raises(posenc.ConfigError, match="rope.rotary_dim"):
        posenc.RoPE(head_dim=64, rotary_dim=7)
    with pytest.raises(ValueError, match="rope.layout = 'half' is invalid"):
        posenc.RoPE(head_dim=64, layout="half")
    with pytest.raises(posenc.ConfigError, match="yarn"):
        posenc.RoPE(head_dim=64, scaling=posenc.YaRNScaling(factor=4, original_max_position=0))
    with pytest.raises(posenc.ConfigError, match="t5.num_buckets"):
        posenc.T5Bias(np.zeros((1, 4)))
    with pytest.raises(ValueError, match="key_table: expected"):
        posenc.Shaw(np.zeros(5))
    with pytest.raises(TypeError, match="scaling: expected one of"):
        posenc.RoPE(head_dim=64, scaling="llama3")
    assert issubclass(posenc.ConfigError, ValueError) and issubclass(posenc.ShapeError, posenc.ConfigError)
