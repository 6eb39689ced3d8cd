"""posenc.CoPE: contextual positions (docs/spec.md §15) against the formula written out in numpy and
against the authors' ContextPosSelfAttn (facebookresearch/RAM, tests/golden/cope.json: outputs and
autograd gradients of q, k, v and the embeddings), through sdpa / sdpa_backward, the fused calls
(equal to sdpa where they compute CoPE, a ConfigError where they do not), the torch op in float32 and
float64, and the argument errors."""

import json
import os

import numpy as np
import pytest
import torch

import posenc
import posenc.torch as pt

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden")


def cope_attention(q, k, v, E, *, causal=True, key_mask=None, value_gates=False, nodiv=False):
    """The spec's equations, one query row at a time, in float64: g = sigmoid(q . c / sqrt(d)), p_ij =
    min(sum_{visible k >= j} g_ik, npos - 1), t = q . E interpolated at p, logit = (q . k + t) / sqrt(d)."""
    B, S, H, D = q.shape
    out = np.zeros_like(q)
    sd = np.sqrt(D)
    for b in range(B):
        for h in range(H):
            for i in range(S):
                vis = np.array([(not causal or j <= i) and (key_mask is None or key_mask[b, j]) for j in range(S)])
                if not vis.any():
                    continue
                c = v[b, :, h] if value_gates else k[b, :, h]
                g = np.where(vis, 1 / (1 + np.exp(-(c @ q[b, i, h]) / sd)), 0.0)
                p = np.minimum(np.cumsum(g[::-1])[::-1], len(E) - 1)
                lo, hi = np.floor(p).astype(int), np.ceil(p).astype(int)
                w = p - lo
                t = (E[hi] @ q[b, i, h]) * w + (E[lo] @ q[b, i, h]) * (1 - w)
                s = k[b, :, h] @ q[b, i, h]
                logit = s / sd + t if nodiv else (s + t) / sd
                logit = np.where(vis, logit, -np.inf)
                a = np.exp(logit - logit.max())
                out[b, i, h] = (a / a.sum()) @ v[b, :, h]
    return out


@pytest.mark.parametrize("causal,value_gates,nodiv,masked", [(True, False, False, False), (False, False, False, True),
                                                              (True, True, False, False), (True, False, True, True)])
def test_cope_equals_the_formula(causal, value_gates, nodiv, masked):
    rng = np.random.default_rng(11)
    B, S, H, D, npos = 2, 9, 2, 4, 6
    q, k, v = (rng.standard_normal((B, S, H, D)) for _ in range(3))
    E = rng.standard_normal((npos, D))
    key_mask = np.ones((B, S), dtype=np.uint8)
    if masked:
        key_mask[1, :3] = 0
    enc = posenc.CoPE(E, gate_source="values" if value_gates else "keys", scale_position_term=not nodiv)
    assert enc.npos == npos and enc.head_dim == D and enc.parameter_count == npos * D
    assert enc.gate_source == ("values" if value_gates else "keys") and enc.scale_position_term == (not nodiv)
    want = cope_attention(q, k, v, E, causal=causal, key_mask=key_mask if masked else None, value_gates=value_gates,
                          nodiv=nodiv)
    got = posenc.sdpa(q, k, v, enc, causal=causal, key_mask=key_mask.ravel() if masked else None)
    rows = key_mask.astype(bool) if masked and causal else np.ones((B, S), dtype=bool)
    assert np.allclose(got[rows], want[rows], rtol=1e-12, atol=1e-12)
    assert enc.gate(2.0) == pytest.approx(1 / (1 + np.exp(-1.0)), rel=1e-15)


def golden_cases():
    return json.load(open(os.path.join(GOLDEN, "cope.json")))["cases"]


def bshd(x, B, H):
    """The authors' [B * heads, S, d] as [B, S, heads, d]."""
    x = np.array(x)
    return x.reshape(B, H, *x.shape[1:]).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: c["id"])
def test_cope_equals_the_authors_code(case):
    B, H = case["batch"], case["heads"]
    q, k, v, dout = (bshd(case[n], B, H) for n in ("q", "k", "v", "dout"))
    enc = posenc.CoPE.from_reference(np.array(case["pos_emb"]),
                                     gate_source="values" if case["val_gates"] else "keys",
                                     scale_position_term=not case["nodiv"])
    assert enc.npos == case["npos"]
    pad = case["padding"]
    key_mask = None if pad is None else (1 - np.array(pad, dtype=np.uint8)).ravel()
    rows = np.ones((B, case["seq"]), dtype=bool) if pad is None else ~np.array(pad, dtype=bool)
    e = case["expected"]
    out = posenc.sdpa(q, k, v, enc, causal=case["causal"], key_mask=key_mask)
    assert np.allclose(out[rows], bshd(e["out_fp64full"], B, H)[rows], rtol=1e-12, atol=1e-12)
    transposed = posenc.CoPE(np.array(case["pos_emb"]).T, gate_source=enc.gate_source,
                             scale_position_term=enc.scale_position_term)
    assert np.array_equal(posenc.sdpa(q, k, v, transposed, causal=case["causal"], key_mask=key_mask), out)
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    out32 = posenc.sdpa(*f32, enc, causal=case["causal"], key_mask=key_mask)
    assert np.allclose(out32[rows], bshd(e["out_fp32"], B, H)[rows], rtol=0, atol=2e-6)
    grad = np.zeros(enc.parameter_count)
    dq, dk, dv = posenc.sdpa_backward(q, k, v, dout, enc, encoder_grad=grad, causal=case["causal"], key_mask=key_mask)
    for got, name in ((dq, "dq"), (dk, "dk"), (dv, "dv")):
        assert np.allclose(got, bshd(e[name + "_fp64full"], B, H), rtol=1e-11, atol=1e-13), name
    assert np.allclose(grad.reshape(case["npos"], -1), np.array(e["dpos_emb_fp64full"]).T, rtol=1e-11, atol=1e-13)


def test_cope_in_the_torch_op():
    torch.manual_seed(3)
    B, S, H, D = 1, 7, 2, 4
    cope = pt.CoPE(head_dim=D, npos=5)
    with torch.no_grad():
        cope.table.normal_()
    q, k, v = (torch.randn(B, S, H, D, requires_grad=True) for _ in range(3))
    out = pt.attention(q, k, v, cope, causal=True)  # float32: the fused kernels
    out.square().sum().backward()
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    cope64 = pt.CoPE(head_dim=D, npos=5, dtype=torch.float64)
    with torch.no_grad():
        cope64.table.copy_(cope.table)
    out64 = pt.attention(q64, k64, v64, cope64, causal=True)
    out64.square().sum().backward()
    assert torch.allclose(out.double(), out64, rtol=0, atol=1e-5)
    for a, b in ((q.grad, q64.grad), (k.grad, k64.grad), (v.grad, v64.grad), (cope.table.grad, cope64.table.grad)):
        assert torch.allclose(a.double(), b, rtol=0, atol=1e-4 * (1 + float(b.abs().max())))
    if not cope.build()[0].fused:
        with pytest.raises(ValueError, match="return_lse"):
            pt.attention(q, k, v, cope, return_lse=True)


def test_cope_errors():
    E = np.zeros((6, 4))
    with pytest.raises(TypeError, match="table: expected a \\[npos, head_dim\\] array"):
        posenc.CoPE(None)
    with pytest.raises(ValueError, match="table"):
        posenc.CoPE(np.zeros(6))
    with pytest.raises(ValueError, match="cope.gate_source"):
        posenc.CoPE(E, gate_source="queries")
    with pytest.raises(posenc.ConfigError, match="cope.head_dim"):
        posenc.CoPE(np.zeros((6, 0)))
    with pytest.raises(TypeError, match="at most one"):
        posenc.combine(posenc.CoPE(E), posenc.ALiBi(num_heads=2))
    assert posenc.combine(posenc.RoPE(head_dim=4), posenc.CoPE(E)).head_dim == 4
    with pytest.raises(posenc.ConfigError, match="head_dim"):
        posenc.sdpa(np.zeros((1, 3, 2, 8)), np.zeros((1, 3, 2, 8)), np.zeros((1, 3, 2, 8)), posenc.CoPE(E))


def test_cope_in_the_fused_calls():
    """Where the fused kernels compute CoPE (encoder.fused) they equal sdpa within their bound; where
    they do not, attention, its backward and the caches refuse it. Paged calls serve decoders: never."""
    rng = np.random.default_rng(12)
    B, S, H, D = 2, 24, 2, 8
    q, k, v, dout = (rng.standard_normal((B, S, H, D)).astype(np.float32) for _ in range(4))
    E = rng.standard_normal((9, D))
    enc = posenc.combine(posenc.RoPE(head_dim=D), posenc.CoPE(E))
    want = posenc.sdpa(*(x.astype(np.float64) for x in (q, k, v)), enc, causal=True)
    grad = np.zeros(enc.parameter_count)
    dwant = posenc.sdpa_backward(*(x.astype(np.float64) for x in (q, k, v, dout)), enc, causal=True,
                                 encoder_grad=grad)
    if enc.fused:  # the bounds of test_torch.py, A bounding |logit| by the norms (the rotation keeps them)
        norm = lambda x: np.linalg.norm(x, axis=-1).max()  # noqa: E731
        A = norm(q) * (norm(k) + norm(E)) / np.sqrt(D)
        out, lse = posenc.attention(q, k, v, enc, causal=True, return_lse=True, bf16_dot_products=False)
        assert np.abs(out - want).max() <= 2e-6 * (1 + A) * np.abs(v).max()
        g32 = np.zeros(enc.parameter_count)
        for got, ref in zip(posenc.attention_backward(q, k, v, out, lse, dout, enc, causal=True, encoder_grad=g32),
                            dwant):
            assert np.abs(got - ref).max() <= 4e-6 * (1 + A) * np.abs(ref).max()
        assert np.abs(g32 - grad).max() <= 4e-6 * (1 + A) * np.abs(grad).max()
    else:
        with pytest.raises(posenc.ConfigError, match="sdpa"):
            posenc.attention(q, k, v, enc, causal=True)
        with pytest.raises(posenc.ConfigError, match="sdpa"):
            posenc.attention_backward(q, k, v, q, np.zeros(B * H * S, dtype=np.float32), dout, enc)
        cache = posenc.KVCache(batch=1, kv_heads=H, head_dim=D)
        with pytest.raises(posenc.ConfigError, match="KV caches"):
            cache.append(enc, k[:1], v[:1], np.arange(S))
    with pytest.raises(posenc.ConfigError, match="CoPE"):
        posenc.paged_attention(q[:, -1:], k, v, np.array([[0], [1]], dtype=np.int32), [S, S], enc)


def test_cope_decode_from_a_kv_cache():
    """A decode step over a KV cache (RoPE + CoPE, the gates over every cached key) equals the last row
    of the causal call over the whole sequence; the fused bound of test_cope_in_the_fused_calls."""
    rng = np.random.default_rng(5)
    B, T, H, D = 2, 40, 2, 8
    k, v = (rng.standard_normal((B, T, H, D)).astype(np.float32) for _ in range(2))
    q = rng.standard_normal((B, T, H, D)).astype(np.float32)
    enc = posenc.combine(posenc.RoPE(head_dim=D), posenc.CoPE(rng.standard_normal((12, D))))
    cache = posenc.KVCache(batch=B, kv_heads=H, head_dim=D)
    cache.append(enc, k[:, :25], v[:, :25], np.tile(np.arange(25), B))
    cache.append(enc, k[:, 25:], v[:, 25:], np.tile(np.arange(25, T), B))
    got = cache.attend(enc, q[:, -1:], np.full(B, T - 1), causal=True)
    want = posenc.sdpa(*(x.astype(np.float64) for x in (q, k, v)), enc, causal=True)[:, -1:]
    without = posenc.sdpa(*(x.astype(np.float64) for x in (q, k, v)), posenc.RoPE(head_dim=D), causal=True)[:, -1:]
    assert np.abs(without - want).max() > 1e-2  # the CoPE term moves the row
    assert np.abs(got - want).max() <= 1e-5 * np.abs(v).max()
