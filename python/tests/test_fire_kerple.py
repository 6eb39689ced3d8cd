"""posenc.KERPLE and posenc.FIRE, the trainable score biases: their bias against the formulas of
docs/spec.md (§16, §17) written out in numpy, KERPLE against the authors' ParallelKerpleLog /
ParallelKerplePower (tests/golden/kerple.json), the special cases FIRE contains (KERPLE-log, ALiBi),
the attention with either bias (sdpa exact, the fused kernels within their bound), and the argument
errors."""

import json
import os

import numpy as np
import pytest

import posenc

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden")


def attention_with_bias(q, k, v, bias, causal):
    """softmax(q k^T / sqrt(d) + bias + mask) v in float64, bias [H, Sq, Sk]."""
    s = np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(q.shape[-1]) + bias[None]
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhij,bjhd->bihd", p / p.sum(-1, keepdims=True), v)


def fused_bound(q, k, v, bias):
    """posenc's stated bound of the fused forward: 2e-6 (1 + A) max|v|, A the largest |logit|."""
    s = np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(q.shape[-1]) + bias[None]
    return 2e-6 * (1 + np.abs(s).max()) * np.abs(v).max()


def kerple_bias(kernel, r1, r2, qp, kp):
    n = np.abs(np.asarray(qp)[:, None] - np.asarray(kp)[None, :]).astype(np.float64)
    r1, r2 = np.asarray(r1)[:, None, None], np.asarray(r2)[:, None, None]
    return -r1 * np.log1p(r2 * n) if kernel == "logarithmic" else -r1 * n ** r2


def fire_bias(c, L, w1, b1, w2, b2, qp, kp, eps=1e-6):
    """docs/spec.md §16: f(u)_h, u = psi(|i - j|) / (psi(max(L, i)) + eps), psi(x) = ln(1 + |c| x)."""
    c, L = abs(c), abs(L)
    qp, kp = np.asarray(qp, dtype=np.float64), np.asarray(kp, dtype=np.float64)
    psi = lambda x: np.log1p(c * x)  # noqa: E731
    u = psi(np.abs(qp[:, None] - kp[None, :])) / (psi(np.maximum(L, qp))[:, None] + eps)
    hidden = np.maximum(u[..., None] * w1 + b1, 0)  # [Sq, Sk, W]
    return np.einsum("ijk,hk->hij", hidden, np.reshape(w2, (len(b2), len(w1)))) + np.asarray(b2)[:, None, None]


# ---- KERPLE ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["logarithmic", "power"])
def test_kerple_equals_the_formula(kernel):
    r1, r2 = [0.5, 1.2, 0.03], [0.7, 0.02, 1.9]
    enc = posenc.KERPLE(r1, r2, kernel=kernel)
    assert enc.kernel == kernel and enc.num_heads == 3 and enc.parameter_count == 6 and enc.fused
    qp, kp = np.arange(5, 12), np.arange(0, 15)
    assert np.allclose(enc.bias(qp, kp), kerple_bias(kernel, r1, r2, qp, kp), rtol=1e-14, atol=0)


def test_kerple_equals_the_authors_code():
    cases = json.load(open(os.path.join(GOLDEN, "kerple.json")))["cases"]
    for c in cases:
        kernel = "logarithmic" if c["kind"] == "log" else "power"
        # authors' names: log p = r1, a = r2; power_ap a = r1, p = r2
        r1, r2 = (c["p"], c["a"]) if kernel == "logarithmic" else (c["a"], c["p"])
        enc = posenc.KERPLE(np.array(r1), np.array(r2), kernel=kernel)
        used = (c["p_used"], c["a_used"]) if kernel == "logarithmic" else (c["a_used"], c["p_used"])
        assert np.array_equal(enc.parameters, np.concatenate(used)), c["id"]
        S = c["seq"]
        qp = [S - 1] if c["decode"] else np.arange(S)
        want = np.array(c["expected"]["bias_fp64"])
        got = enc.bias(qp, np.arange(S))
        causal = np.asarray(qp)[:, None] >= np.arange(S)[None, :]  # theirs is 0 above the diagonal
        assert np.allclose(got[:, causal], want[:, causal], rtol=0, atol=1e-12), c["id"]


def test_kerple_power_with_exponent_one_is_alibi():
    slopes = posenc.alibi_slopes(4)
    enc = posenc.KERPLE(slopes, [1.0] * 4, kernel="power", min_parameter=1e-4)  # the last slope is 2^-8
    p = np.arange(9)
    assert np.allclose(enc.bias(p, p), posenc.ALiBi(num_heads=4).bias(p, p), rtol=1e-15, atol=0)


@pytest.mark.parametrize("kernel", ["logarithmic", "power"])
def test_attention_with_kerple(kernel):
    rng = np.random.default_rng(5)
    B, S, H, D = 2, 20, 3, 8
    q, k, v = (rng.standard_normal((B, S, H, D)).astype(np.float32).astype(np.float64) for _ in range(3))
    r1, r2 = rng.uniform(0.1, 2, H), rng.uniform(0.1, 1.5, H)
    enc = posenc.KERPLE(r1, r2, kernel=kernel)
    bias = kerple_bias(kernel, r1, r2, np.arange(S), np.arange(S))
    want = attention_with_bias(q, k, v, bias, causal=True)
    assert np.allclose(posenc.sdpa(q, k, v, enc, causal=True), want, rtol=1e-12, atol=1e-12)
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    got = posenc.attention(*f32, enc, causal=True, bf16_dot_products=False)
    assert np.abs(got - want).max() <= fused_bound(q, k, v, bias)


def test_kerple_errors():
    with pytest.raises(ValueError, match="r2: expected one value per head"):
        posenc.KERPLE([1.0, 2.0], [1.0])
    with pytest.raises(TypeError, match="r1: expected numbers"):
        posenc.KERPLE(None, [1.0])
    with pytest.raises(TypeError, match="r2: expected numbers"):
        posenc.KERPLE([1.0], ["a"])
    with pytest.raises(ValueError, match="kerple.kernel"):
        posenc.KERPLE([1.0], [1.0], kernel="gaussian")
    with pytest.raises(posenc.ConfigError, match="kerple.r2"):
        posenc.KERPLE([1.0], [float("nan")])
    with pytest.raises(posenc.ConfigError, match="kerple.num_heads"):
        posenc.KERPLE([], [])
    with pytest.raises(posenc.ConfigError, match="kerple.max_exponent"):
        posenc.KERPLE([1.0], [1.0], kernel="power", max_exponent=3.0)
    with pytest.raises(posenc.ConfigError, match="kerple.min_parameter"):
        posenc.KERPLE([1.0], [1.0], min_parameter=0.0)
    q = np.zeros((1, 4, 2, 8), dtype=np.float32)
    with pytest.raises(posenc.ShapeError, match="num_heads"):
        posenc.attention(q, q, q, posenc.KERPLE([1.0] * 3, [1.0] * 3))


# ---- FIRE -----------------------------------------------------------------------------------------


def random_fire(rng, H=3, W=5, c=0.3, L=6.0):
    return dict(c=c, threshold=L, w1=rng.standard_normal(W), b1=rng.standard_normal(W),
                w2=rng.standard_normal((H, W)), b2=rng.standard_normal(H))


def test_fire_equals_the_formula():
    rng = np.random.default_rng(7)
    p = random_fire(rng, c=-0.3, L=-6.0)  # |c| and |L| are used
    enc = posenc.FIRE(num_heads=3, **p)
    assert enc.mlp_width == 5 and enc.num_heads == 3 and enc.parameter_count == 2 + 2 * 5 + 3 * 5 + 3
    flat = np.concatenate([[p["c"], p["threshold"]], p["w1"], p["b1"], p["w2"].ravel(), p["b2"]])
    assert np.array_equal(enc.parameters, flat)
    qp, kp = np.arange(0, 14), np.arange(0, 14)  # queries on both sides of L
    want = fire_bias(p["c"], p["threshold"], p["w1"], p["b1"], p["w2"], p["b2"], qp, kp)
    assert np.allclose(enc.bias(qp, kp), want, rtol=1e-13, atol=1e-13)
    flat_enc = posenc.FIRE(flat, num_heads=3, mlp_width=5)
    assert np.array_equal(flat_enc.bias(qp, kp), enc.bias(qp, kp))
    assert enc.normalized_distance(10, 3) == pytest.approx(np.log1p(0.3 * 7) / (np.log1p(0.3 * 10) + 1e-6), rel=1e-14)


def test_fire_contains_kerple_log_and_alibi():
    # KERPLE-log: f linear with slope -r1 (psi(L) + eps) and c = r2, for queries below L
    r1, r2, L = np.array([0.4, 1.3]), 0.25, 40.0
    psiL = np.log1p(r2 * L) + 1e-6
    fire = posenc.FIRE(num_heads=2, c=r2, threshold=L, w1=[1.0], b1=[0.0], w2=(-r1 * psiL)[:, None], b2=[0.0, 0.0])
    p = np.arange(30)
    kerple = posenc.KERPLE(r1, [r2, r2])
    assert np.allclose(fire.bias(p, p), kerple.bias(p, p), rtol=1e-12, atol=1e-12)
    # ALiBi as c -> 0: ln(1 + c n) / c -> n
    c = 1e-9
    m = posenc.alibi_slopes(2)
    psiL = np.log1p(c * L) + 1e-6
    fire = posenc.FIRE(num_heads=2, c=c, threshold=L, w1=[1.0], b1=[0.0], w2=(-m * psiL / c)[:, None], b2=[0.0, 0.0])
    assert np.allclose(fire.bias(p, p), posenc.ALiBi(num_heads=2).bias(p, p), rtol=1e-6, atol=1e-9)


def test_attention_with_fire():
    rng = np.random.default_rng(8)
    B, S, H, D = 2, 20, 3, 8
    q, k, v = (rng.standard_normal((B, S, H, D)).astype(np.float32).astype(np.float64) for _ in range(3))
    p = random_fire(rng, H=H, L=8.0)
    enc = posenc.FIRE(num_heads=H, **p)
    bias = fire_bias(p["c"], p["threshold"], p["w1"], p["b1"], p["w2"], p["b2"], np.arange(S), np.arange(S))
    want = attention_with_bias(q, k, v, bias, causal=True)
    assert np.allclose(posenc.sdpa(q, k, v, enc, causal=True), want, rtol=1e-12, atol=1e-12)
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    got = posenc.attention(*f32, enc, causal=True, bf16_dot_products=False)
    assert np.abs(got - want).max() <= fused_bound(q, k, v, bias)
    rope = posenc.RoPE(head_dim=D)
    both = posenc.combine(rope, enc)
    qr, kr = rope.transform_q(q.copy(), np.tile(np.arange(S), B)), rope.transform_k(k.copy(), np.tile(np.arange(S), B))
    assert np.allclose(posenc.sdpa(q, k, v, both, causal=True), attention_with_bias(qr, kr, v, bias, True),
                       rtol=1e-12, atol=1e-12)


def test_fire_errors():
    w = dict(w1=[1.0], b1=[0.0], w2=[[1.0]], b2=[0.0])
    with pytest.raises(TypeError, match="all of w1, b1, w2 and b2"):
        posenc.FIRE(num_heads=1, w1=[1.0])
    with pytest.raises(TypeError, match="not both"):
        posenc.FIRE(np.zeros(6), num_heads=1, mlp_width=1, c=0.5)
    with pytest.raises(TypeError, match="num_heads"):
        posenc.FIRE(np.zeros(6))
    with pytest.raises(TypeError, match="c: expected a number"):
        posenc.FIRE(num_heads=1, c="x", **w)
    with pytest.raises(posenc.ConfigError, match="fire.parameters"):
        posenc.FIRE(np.zeros(5), num_heads=1, mlp_width=1)  # 2 + 2 W + H W + H = 6
    with pytest.raises(posenc.ConfigError, match="fire.w2"):
        posenc.FIRE(num_heads=2, **{**w, "b2": [0.0, 0.0]})
    with pytest.raises(posenc.ConfigError, match="fire.num_heads"):
        posenc.FIRE(num_heads=0, **w)
    with pytest.raises(posenc.ConfigError, match="fire.parameters"):
        posenc.FIRE(num_heads=1, c=float("inf"), **w)
    with pytest.raises(posenc.ConfigError, match="fire.eps"):
        posenc.FIRE(num_heads=1, eps=0.0, c=0.0, **w)
    with pytest.raises(ValueError, match="h: expected a head"):
        posenc.FIRE(num_heads=1, **w).mlp(1, 0.5)
