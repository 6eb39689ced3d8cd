"""posenc's encoders and attention against plain-PyTorch implementations written from the papers and
the Hugging Face code (reference.py), in float64 unless a test says otherwise.

Bounds. The transforms in float64 agree to 1e-12 relative (the references and posenc take different
but exact-to-rounding routes to the same angles). The fused float32 attention against the float64
reference on the same float32 inputs: |out - ref| <= 2e-6 (1 + A) max|v|, A = max |logit|: posenc's
stated fused bound 5e-7 (1 + A) max|v| against its double oracle, plus the float32 rotation of q and
k before the products (a few ulp per element, at most 1e-6 A after scaling)."""

import math

import numpy as np
import pytest
import torch

import posenc
import reference as ref

torch.manual_seed(0)


def rand(*shape, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype)


def positions(B, S, start=0):
    return torch.arange(start, start + S).repeat(B, 1)


@pytest.mark.parametrize("theta,scaling,inv", [
    (10000.0, None, lambda D: ref.rope_inv_freq(D, 10000.0)),
    (5e5, posenc.Llama3Scaling(factor=8), lambda D: ref.llama3_inv_freq(D, 5e5)),
])
def test_rope_half_split_equals_hf(theta, scaling, inv):
    B, S, H, D = 2, 9, 3, 64
    x = rand(B, S, H, D)
    p = positions(B, S, start=8190)
    want = ref.rope_half_split(x, p, inv(D))
    got = posenc.RoPE(head_dim=D, theta=theta, scaling=scaling).transform_q(x.clone(), p.reshape(-1))
    assert torch.allclose(got, want, rtol=0, atol=1e-11 * want.abs().max())
    np.testing.assert_allclose(posenc.RoPE(head_dim=D, theta=theta, scaling=scaling).inv_freq, inv(D).numpy(),
                               rtol=1e-15)


def test_rope_interleaved_and_backward_is_transpose():
    B, S, H, D = 1, 7, 2, 32
    r = posenc.RoPE(head_dim=D, layout="interleaved")
    x, y = rand(B, S, H, D), rand(B, S, H, D)
    p = positions(B, S, start=100).reshape(-1)
    want = ref.rope_interleaved(x, p.view(B, S), ref.rope_inv_freq(D, 10000.0))
    assert torch.allclose(r.transform_k(x.clone(), p), want, atol=1e-12)
    # <T x, y> == <x, T^T y>
    lhs = (r.transform_q(x.clone(), p) * y).sum()
    rhs = (x * r.transform_q_backward(y.clone(), p)).sum()
    assert abs(float(lhs - rhs)) < 1e-11 * float(x.abs().sum())


def test_xpos_equals_paper():
    B, S, H, D = 1, 11, 2, 16
    x = rand(B, S, H, D)
    p = positions(B, S, start=3)
    e = posenc.XPos(head_dim=D, center=5)
    assert torch.allclose(e.transform_q(x.clone(), p.reshape(-1)), ref.xpos(x, p, True, center=5), atol=1e-12)
    assert torch.allclose(e.transform_k(x.clone(), p.reshape(-1)), ref.xpos(x, p, False, center=5), atol=1e-12)


def test_mrope_text_positions_equal_rope():
    B, S, H, D = 1, 5, 2, 32
    x = rand(B, S, H, D)
    p = positions(B, S).reshape(-1)
    m = posenc.MRoPE(head_dim=D, section=[8, 4, 4], theta=1e6)
    r = posenc.RoPE(head_dim=D, theta=1e6)
    assert torch.equal(m.transform_q(x.clone(), p), r.transform_q(x.clone(), p))


def test_temperature_equals_llama4():
    B, S, H, D = 1, 4, 1, 8
    x = rand(B, S, H, D)
    p = torch.tensor([0, 8190, 8191, 100000])
    want = x * (torch.log(torch.floor((p.double() + 1) / 8192) + 1) * 0.1 + 1)[None, :, None, None]
    got = posenc.Temperature(head_dim=D).transform_q(x.clone(), p)
    assert torch.allclose(got, want, atol=1e-14)


@pytest.mark.parametrize("n", [1, 4, 8, 12, 32, 40])
def test_alibi_slopes_equal_bloom(n):
    np.testing.assert_allclose(posenc.alibi_slopes(n), ref.alibi_slopes(n).numpy(), rtol=1e-15)
    qp, kp = torch.arange(5, 9), torch.arange(0, 9)
    np.testing.assert_allclose(posenc.ALiBi(num_heads=n).bias(qp, kp), ref.alibi_bias(n, qp, kp).numpy(),
                               rtol=1e-15)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_equal_hf(bidirectional):
    rel = torch.cat([torch.arange(-3000, 3000), torch.tensor([10 ** 6, -10 ** 6])])
    table = rand(32, 4)
    e = posenc.T5Bias(table, bidirectional=bidirectional)
    want = ref.t5_bucket(rel, bidirectional)
    assert np.array_equal(e.buckets(rel), want.numpy())
    qp, kp = torch.arange(0, 40), torch.arange(0, 300)
    np.testing.assert_array_equal(e.bias(qp, kp), ref.t5_bias(table, qp, kp, bidirectional).numpy())


def test_sinusoidal_equals_paper():
    d = 10
    e = posenc.Sinusoidal(d_model=d)
    p = torch.arange(0, 50)
    i = torch.arange(0, d // 2, dtype=torch.float64)
    ang = p.double()[:, None] / (10000 ** (2 * i / d))[None, :]
    want = torch.stack([ang.sin(), ang.cos()], dim=-1).reshape(50, d)
    np.testing.assert_allclose(e.encode(p), want.numpy(), atol=1e-13)


def test_learned_absolute_rows():
    table = rand(6, 4)
    e = posenc.LearnedAbsolute(table, offset=2, out_of_range="clamp_to_last")
    x = torch.zeros(5, 4, dtype=torch.float64)
    e.add(x, torch.arange(5))
    rows = (torch.arange(5) + 2).clamp(max=5)
    assert torch.equal(x, table[rows])


def attention_bound(q, k, v, bias=None, scale=None):
    D = q.shape[-1]
    s = torch.einsum("bihd,bjhd->bhij", q.double(), k.double().repeat_interleave(q.shape[2] // k.shape[2], 2))
    A = float(s.abs().max()) * (scale if scale is not None else D ** -0.5)
    if bias is not None:
        A += float(bias.abs().max())
    return 2e-6 * (1 + A) * float(v.abs().max())


@pytest.mark.parametrize("case", ["rope_alibi", "t5", "shaw", "xpos_window", "softcap_sinks_gqa"])
def test_fused_attention_equals_reference(case):
    B, S, H, Hkv, D = 2, 70, 4, 4, 32
    if case == "softcap_sinks_gqa":
        Hkv = 2
    q, k, v = (torch.randn(B, S, h, D) for h in (H, Hkv, Hkv))
    qd, kd, vd = q.double(), k.double(), v.double()
    p = positions(B, S)
    pos = torch.arange(S)
    kw, rkw, enc = {}, {}, None
    if case == "rope_alibi":
        enc = posenc.combine(posenc.RoPE(head_dim=D, theta=1e4), posenc.ALiBi(num_heads=H))
        inv = ref.rope_inv_freq(D, 1e4)
        qd, kd = ref.rope_half_split(qd, p, inv), ref.rope_half_split(kd, p, inv)
        rkw["bias"] = ref.alibi_bias(H, pos, pos)
    elif case == "t5":
        table = torch.randn(32, H)
        enc = posenc.T5Bias(table, bidirectional=False)
        rkw["bias"] = ref.t5_bias(table.double(), pos, pos, bidirectional=False)
        kw["scale"] = rkw["scale"] = 1.0
    elif case == "shaw":
        kt, vt = torch.randn(2 * 5 + 1, D), torch.randn(2 * 5 + 1, D)
        enc = posenc.Shaw(kt, vt)
        rkw["shaw"] = (ref.shaw_index(pos, pos, 5), kt.double(), vt.double())
    elif case == "xpos_window":
        enc = posenc.XPos(head_dim=D)
        qd, kd = ref.xpos(qd, p, True), ref.xpos(kd, p, False)
        kw["window"] = rkw["window"] = 16
    else:
        sinks = torch.randn(H)
        kw.update(softcap=5.0, sinks=sinks)
        rkw.update(softcap=5.0, sinks=sinks.double())
    want = ref.attention(qd, kd, vd, causal=True, **rkw)
    got = posenc.attention(q, k, v, enc, causal=True, **kw)
    bound = attention_bound(qd, kd, vd, rkw.get("bias"), rkw.get("scale"))
    assert float((got.double() - want).abs().max()) <= bound
    # the double oracle agrees to rounding
    got64 = posenc.sdpa(q.double(), k.double(), v.double(), enc, causal=True, **kw)
    assert float((got64 - want).abs().max()) <= 1e-12 * (1 + float(want.abs().max()))
