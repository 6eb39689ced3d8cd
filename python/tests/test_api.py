"""The array-level API: numpy and torch in, the same kind out; views read where they are (strides,
read-only inputs, out= written in place); every K/V storage type and the ragged and paged forms
equal the plain float call as posenc documents (bit for bit where it says so)."""

import numpy as np
import pytest
import torch

import posenc

rng = np.random.default_rng(0)


def arr(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def test_numpy_in_numpy_out_torch_in_torch_out():
    q, k, v = arr(1, 9, 4, 32), arr(1, 9, 2, 32), arr(1, 9, 2, 32)
    out = posenc.attention(q, k, v, causal=True)
    assert isinstance(out, np.ndarray) and out.shape == (1, 9, 4, 32) and out.dtype == np.float32
    tout, lse = posenc.attention(*(torch.from_numpy(x) for x in (q, k, v)), causal=True, return_lse=True)
    assert isinstance(tout, torch.Tensor) and lse.shape == (1, 4, 9)
    assert np.array_equal(tout.numpy(), out)
    ref = posenc.sdpa(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), causal=True)
    assert ref.dtype == np.float64 and np.abs(ref - out).max() < 1e-5


def test_strided_views_and_out_written_in_place():
    base = arr(1, 4, 16, 64)  # [B, H, S, D] memory: read as [B, S, H, D] views
    q = np.swapaxes(base, 1, 2)
    assert not q.flags.c_contiguous
    k = q.copy()
    k.setflags(write=False)  # read-only inputs are fine
    out = np.full((1, 16, 4, 64), np.nan, np.float32)
    got = posenc.attention(q, k, k, causal=True, out=out)
    assert got is out and not np.isnan(out).any()
    assert np.array_equal(out, posenc.attention(np.ascontiguousarray(q), k, k, causal=True))
    t = torch.from_numpy(base)
    tout = torch.empty(1, 4, 16, 64)
    posenc.attention(t, t, t, causal=True, layout="bhsd", out=tout)
    assert np.array_equal(tout.transpose(1, 2).numpy(), out)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_kv_equals_float_call_on_rounded_values(dtype):
    q, k, v = (torch.randn(2, 70, 4, 64) for _ in range(3))
    kh, vh = k.to(dtype), v.to(dtype)
    enc = posenc.combine(posenc.RoPE(head_dim=64), posenc.ALiBi(num_heads=4))
    # bf16_dot_products=False: the exact path (the default rounds q and p to bf16 on AVX512_BF16).
    got = posenc.attention(q, kh, vh, enc, causal=True, transform_keys=False, bf16_dot_products=False)
    want = posenc.attention(q, kh.float(), vh.float(), enc, causal=True, transform_keys=False)
    assert float((got - want).abs().max()) < 1e-5


def test_q8_0_round_trip_and_attention():
    k = arr(1, 40, 2, 64)
    blocks = posenc.quantize_q8_0(k)
    assert blocks.shape == (1, 40, 2, 2, 34) and blocks.dtype == np.uint8
    deq = posenc.dequantize_q8_0(blocks)
    assert deq.shape == k.shape and np.abs(deq - k).max() <= np.abs(k).max() / 127
    q = arr(1, 1, 4, 64)
    enc = posenc.RoPE(head_dim=64)
    # exact kernels: bit for bit the float call on the dequantised values
    got = posenc.attention(q, blocks, blocks, enc, transform_keys=False, q8_0_int8_dot_products=False)
    want = posenc.attention(q, deq, deq, enc, transform_keys=False, q8_0_int8_dot_products=False)
    assert np.array_equal(got, want)
    # int8 key products (the default where the CPU has VNNI): within posenc's stated bound
    # (exp(2 delta) - 1) max|v| with delta = scale (max|q| / 254) sum|k| (fast_attention_options)
    fast = posenc.attention(q, blocks, blocks, enc, transform_keys=False)
    delta = 64 ** -0.5 * np.abs(q).max() / 254 * np.abs(deq).sum(axis=-1).max()
    assert np.abs(fast - want).max() <= (np.exp(2 * delta) - 1) * np.abs(deq).max() + 1e-5


def test_ragged_equals_one_call_per_sequence():
    lens_q, lens_k = [5, 1, 7], [5, 30, 9]
    cu_q, cu_k = np.cumsum([0] + lens_q), np.cumsum([0] + lens_k)
    q, k, v = arr(1, cu_q[-1], 4, 32), arr(1, cu_k[-1], 2, 32), arr(1, cu_k[-1], 2, 32)
    enc = posenc.RoPE(head_dim=32)
    out = posenc.attention(q, k, v, enc, causal=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    for s in range(3):
        one = posenc.attention(q[:, cu_q[s]:cu_q[s + 1]], k[:, cu_k[s]:cu_k[s + 1]], v[:, cu_k[s]:cu_k[s + 1]], enc,
                               causal=True)
        assert np.array_equal(out[:, cu_q[s]:cu_q[s + 1]], one)


def test_paged_equals_contiguous():
    bs, nb, H, D = 16, 8, 2, 32
    kp, vp = arr(nb, bs, H, D), arr(nb, bs, H, D)
    table = np.array([[3, 0, 5], [1, 7, 2]], np.int32)
    lengths = np.array([40, 33], np.int32)
    q = arr(2, 1, 4, D)
    out = posenc.paged_attention(q, kp, vp, table, lengths, posenc.ALiBi(num_heads=4), causal=True)
    for b in range(2):
        kc = np.concatenate([kp[i] for i in table[b]])[None, :lengths[b]]
        vc = np.concatenate([vp[i] for i in table[b]])[None, :lengths[b]]
        one = posenc.attention(q[b:b + 1], kc, vc, posenc.ALiBi(num_heads=4), causal=True)
        assert np.array_equal(out[b:b + 1], one)


def test_options_positions_segments_padding():
    q, k, v = arr(2, 6, 2, 16), arr(2, 6, 2, 16), arr(2, 6, 2, 16)
    pos = np.tile(np.arange(100, 106), 2)
    seg = np.array([0, 0, 0, 1, 1, 1] * 2)
    enc = posenc.RoPE(head_dim=16)
    a = posenc.attention(q, k, v, enc, causal=True, query_positions=pos, key_positions=pos, query_segments=seg,
                         key_segments=seg)
    b = posenc.sdpa(q, k, v, enc, causal=True, query_positions=pos, key_positions=pos, query_segments=seg,
                    key_segments=seg)
    assert np.abs(a - b).max() < 1e-5
    # the first token of segment 1 sees itself only: its output is its value row
    np.testing.assert_allclose(a[:, 3], v[:, 3].repeat(1, axis=1), rtol=1e-6)
    masked = posenc.attention(q, k, v, key_lengths=[6, 2])
    np.testing.assert_allclose(masked[1], posenc.attention(q[1:], k[1:, :2], v[1:, :2])[0], rtol=1e-6)


def test_encoder_objects():
    r = posenc.RoPE(head_dim=128, theta=5e5, scaling=posenc.Llama3Scaling(factor=8, original_max_position=8192))
    assert isinstance(r, posenc.RoPE) and isinstance(r, posenc.Encoder)
    assert r.name == "rope" and r.head_dim == 128 and r.rotary_dim == 128 and r.parameter_count == 0
    yarn = posenc.RoPE(head_dim=64, scaling=posenc.YaRNScaling(factor=4, original_max_position=4096, mscale=1,
                                                               mscale_all_dim=1))
    assert yarn.softmax_scale_multiplier > 1 and yarn.attention_scaling == 1.0
    c = posenc.combine(posenc.RoPE(head_dim=16), posenc.Temperature(head_dim=16), posenc.T5Bias(np.zeros((32, 4))))
    assert c.name == "rope+temperature+t5" and c.num_heads == 4 and c.parameter_count == 128
    assert posenc.t5_bucket(-200, bidirectional=False) == 31
    assert repr(posenc.NoPE()) == "<posenc encoder nope>"
    dyn = posenc.RoPE(head_dim=16, scaling=posenc.DynamicNTKScaling(factor=2, original_max_position=32))
    assert not np.array_equal(dyn.frequencies_at(32), dyn.frequencies_at(128))


def test_threads_setting():
    posenc.set_num_threads(1)
    assert posenc.get_num_threads() == 1
    posenc.set_num_threads(0)
    assert posenc.get_num_threads() >= 1
    with pytest.raises(ValueError):
        posenc.set_num_threads(-1)


def test_type_stubs_cover_the_extension_module():
    import ast
    import os

    import posenc._posenc as ext

    stub = os.path.join(os.path.dirname(posenc.__file__), "_posenc.pyi")
    tree = ast.parse(open(stub).read())
    declared = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    declared |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    public = {n for n in dir(ext) if not n.startswith("__") or n == "__version__"}
    assert public <= declared, sorted(public - declared)
