"""posenc.DeBERTa: DeBERTa's disentangled attention over projected tables, against the formula written
out in numpy (HF DisentangledSelfAttention: c2p gathered at row c(i, j), p2c at the same row, all terms
over sqrt(d (1 + n))), through sdpa and the fused attention, and its argument errors."""

import numpy as np
import pytest

import posenc


def bucket_rows(S, buckets, max_pos):
    """HF make_log_bucket_position + clamp(r + span, 0, 2 span - 1) for r = i - j (float32 as HF)."""
    r = np.arange(S)[:, None] - np.arange(S)[None, :]
    span = buckets if buckets > 0 else max_pos
    if buckets > 0:
        mid = buckets // 2
        sign = np.sign(r)
        abs_pos = np.where((r < mid) & (r > -mid), mid - 1, np.abs(r)).astype(np.float32)
        log_pos = np.ceil(np.log(abs_pos / mid) / np.log(np.float32((max_pos - 1) / mid)) * (mid - 1)) + mid
        r = np.where(np.abs(r) <= mid, r, log_pos * sign).astype(np.int64)
    return np.clip(r + span, 0, 2 * span - 1)


@pytest.mark.parametrize("buckets,max_pos,terms", [(8, 32, "both"), (0, 6, "both"), (8, 32, "c2p"), (8, 32, "p2c")])
def test_deberta_equals_the_formula(buckets, max_pos, terms):
    rng = np.random.default_rng(3)
    B, S, H, D = 1, 24, 2, 8
    span = buckets if buckets > 0 else max_pos
    q, k, v = (rng.standard_normal((B, S, H, D)) for _ in range(3))
    kr = rng.standard_normal((2 * span, H, D)) if terms in ("both", "c2p") else None
    qr = rng.standard_normal((2 * span, H, D)) if terms in ("both", "p2c") else None
    enc = posenc.DeBERTa(kr, qr, position_buckets=buckets, max_relative_positions=max_pos)
    n = (kr is not None) + (qr is not None)
    assert enc.c2p == (kr is not None) and enc.p2c == (qr is not None) and enc.table_rows == 2 * span
    assert enc.scale_multiplier == pytest.approx((1 + n) ** -0.5, rel=1e-15)
    c = bucket_rows(S, buckets, max_pos)
    assert all(enc.row(i, j) == c[i, j] for i in range(S) for j in range(S))
    logits = np.einsum("bihd,bjhd->bhij", q, k)
    if kr is not None:
        logits += np.einsum("bihd,ijhd->bhij", q, kr[c])
    if qr is not None:
        logits += np.einsum("bjhd,ijhd->bhij", k, qr[c])
    logits /= np.sqrt(D * (1 + n))
    p = np.exp(logits - logits.max(-1, keepdims=True))
    want = np.einsum("bhij,bjhd->bihd", p / p.sum(-1, keepdims=True), v)
    assert np.allclose(posenc.sdpa(q, k, v, enc), want, rtol=1e-12, atol=1e-12)
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    assert np.allclose(posenc.attention(*f32, enc), want, rtol=2e-4, atol=2e-5)


def test_deberta_errors():
    t = np.zeros((16, 2, 8))
    with pytest.raises(TypeError, match="key_table"):
        posenc.DeBERTa()
    with pytest.raises(ValueError, match="query_table"):
        posenc.DeBERTa(t, np.zeros((16, 2, 4)), position_buckets=8, max_relative_positions=32)
    with pytest.raises(ValueError, match="2 span"):
        posenc.DeBERTa(np.zeros((16, 8)))
    with pytest.raises(posenc.ConfigError, match="deberta"):
        posenc.DeBERTa(t, position_buckets=4, max_relative_positions=32)  # 16 rows, 8 expected
    with pytest.raises(posenc.ConfigError, match="bucket_rule"):
        posenc.DeBERTa(t, position_buckets=8, max_relative_positions=32, bucket_rule="other")


def test_deberta_module_fused_float32_equals_float64():
    """pt.DeBERTa in float32 (the fused forward and backward, table gradients inside the tiles) against
    the same module in float64 (sdpa / sdpa_backward, which gradcheck checks in test_gradcheck.py)."""
    import torch

    import posenc.torch as pt

    torch.manual_seed(4)
    B, S, H, D = 2, 40, 2, 16
    deb = pt.DeBERTa(num_heads=H, head_dim=D, position_buckets=8, max_relative_positions=32)
    deb64 = pt.DeBERTa(num_heads=H, head_dim=D, position_buckets=8, max_relative_positions=32, dtype=torch.float64)
    with torch.no_grad():
        deb64.key_table.copy_(deb.key_table)
        deb64.query_table.copy_(deb.query_table)
    q, k, v = (torch.randn(B, S, H, D, requires_grad=True) for _ in range(3))
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    out = pt.attention(q, k, v, deb, key_lengths=[40, 25])
    out64 = pt.attention(q64, k64, v64, deb64, key_lengths=[40, 25])
    dout = torch.randn(B, S, H, D)
    (out * dout).sum().backward()
    (out64 * dout.double()).sum().backward()
    assert float((out.double() - out64).abs().max()) < 1e-5
    for a, b in ((q.grad, q64.grad), (k.grad, k64.grad), (v.grad, v64.grad), (deb.key_table.grad, deb64.key_table.grad),
                 (deb.query_table.grad, deb64.query_table.grad)):
        assert float((a.double() - b).abs().max()) <= 2e-5 * (1 + float(b.abs().max()))
