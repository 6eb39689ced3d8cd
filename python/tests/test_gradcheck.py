"""torch.autograd.gradcheck in float64 for posenc.torch.attention with every encoder and every
trainable parameter (T5 table, Shaw key and value tables, learned absolute table, attention sinks).

float64 inputs run posenc's double-precision pair, sdpa forward and sdpa_backward (the oracle of
the fused kernels), so gradcheck compares sdpa_backward's analytic gradients with central finite
differences of sdpa: a check of the backward's mathematics and of the binding's plumbing (which
gradient lands on which tensor). The fused float32 kernels are checked against this pair and against
plain-PyTorch autograd in test_torch.py."""

import pytest
import torch
from torch.autograd import gradcheck

import posenc
import posenc.torch as pt

torch.manual_seed(1)
B, S, H, Hkv, D = 2, 6, 4, 2, 8


def qkv(Hk=Hkv):
    mk = lambda h: torch.randn(B, S, h, D, dtype=torch.float64, requires_grad=True)  # noqa: E731
    return mk(H), mk(Hk), mk(Hk)


FIXED = {
    "nope": lambda: None,
    "rope": lambda: posenc.RoPE(head_dim=D),
    "rope_yarn_partial": lambda: posenc.RoPE(head_dim=D, rotary_dim=4, scaling=posenc.YaRNScaling(
        factor=4, original_max_position=4)),
    "rope_interleaved_llama3": lambda: posenc.RoPE(head_dim=D, layout="interleaved", scaling=posenc.Llama3Scaling(
        factor=8, original_max_position=4)),
    "xpos": lambda: posenc.XPos(head_dim=D),
    "mrope": lambda: posenc.MRoPE(head_dim=D, section=[2, 1, 1]),
    "temperature": lambda: posenc.Temperature(head_dim=D, floor_scale=2, scale=0.5),
    "alibi": lambda: posenc.ALiBi(num_heads=H),
    "rope+alibi": lambda: posenc.combine(posenc.RoPE(head_dim=D), posenc.ALiBi(num_heads=H)),
    "rope+temperature": lambda: posenc.combine(posenc.RoPE(head_dim=D), posenc.Temperature(head_dim=D, floor_scale=2)),
}


@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_encoders(name):
    enc = FIXED[name]()
    q, k, v = qkv()
    assert gradcheck(lambda q, k, v: pt.attention(q, k, v, enc, causal=True), (q, k, v))


@pytest.mark.parametrize("opts", [dict(causal=True, window=3), dict(causal=False, softcap=2.0),
                                  dict(causal=True, chunk=4), dict(key_lengths=[5, 3])])
def test_masks_and_softcap(opts):
    q, k, v = qkv()
    enc = posenc.RoPE(head_dim=D)
    assert gradcheck(lambda q, k, v: pt.attention(q, k, v, enc, **opts), (q, k, v))


def test_t5_table():
    t5 = pt.T5Bias(num_heads=H, num_buckets=8, max_distance=16, bidirectional=False, dtype=torch.float64)
    q, k, v = qkv()
    assert gradcheck(lambda q, k, v, w: pt.attention(q, k, v, t5, causal=True, scale=1.0), (q, k, v, t5.weight))


def test_t5_table_with_rope_bidirectional():
    t5 = pt.T5Bias(num_heads=H, num_buckets=8, max_distance=16, dtype=torch.float64)
    enc = pt.combine(posenc.RoPE(head_dim=D), t5)
    q, k, v = qkv()
    assert gradcheck(lambda q, k, v, w: pt.attention(q, k, v, enc), (q, k, v, t5.weight))


@pytest.mark.parametrize("per_head,value_term", [(False, True), (True, True), (False, False)])
def test_shaw_tables(per_head, value_term):
    shaw = pt.ShawRelative(head_dim=D, max_relative_position=3, value_term=value_term,
                           num_heads=H if per_head else None, dtype=torch.float64)
    q, k, v = qkv()
    params = [shaw.key_table] + ([shaw.value_table] if value_term else [])
    assert gradcheck(lambda q, k, v, *p: pt.attention(q, k, v, shaw, causal=True), (q, k, v, *params))


def test_sinks_with_gqa_and_softcap():
    sinks = torch.randn(H, dtype=torch.float64, requires_grad=True)
    q, k, v = qkv()
    enc = posenc.ALiBi(num_heads=H)
    assert gradcheck(lambda q, k, v, s: pt.attention(q, k, v, enc, causal=True, softcap=3.0, sinks=s),
                     (q, k, v, sinks))


def test_learned_absolute_table():
    la = pt.LearnedAbsolute(max_len=5, d_model=D, offset=1, out_of_range="clamp_to_last", dtype=torch.float64)
    x = torch.randn(B, S, D, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x, w: la(x), (x, la.weight))


def test_layout_bhsd():
    q, k, v = (x.detach().transpose(1, 2).requires_grad_() for x in qkv())
    enc = posenc.combine(posenc.RoPE(head_dim=D), posenc.ALiBi(num_heads=H))
    assert gradcheck(lambda q, k, v: pt.attention(q, k, v, enc, causal=True, layout="bhsd"), (q, k, v))


def test_vision_rope():
    pos = posenc.VisionPositions.merged([[1, 2, 3]], 1)  # S = 6 tokens
    enc = posenc.VisionRoPE(pos, head_dim=D)
    q, k, v = qkv()
    assert gradcheck(lambda q, k, v: pt.attention(q, k, v, enc), (q, k, v))


@pytest.mark.parametrize("c2p,p2c,buckets", [(True, True, 4), (True, False, 0), (False, True, 4)])
def test_deberta_tables(c2p, p2c, buckets):
    deb = pt.DeBERTa(num_heads=H, head_dim=D, position_buckets=buckets, max_relative_positions=8 if buckets else 3,
                     c2p=c2p, p2c=p2c, dtype=torch.float64)
    q, k, v = qkv(H)
    params = [t for t in (deb.key_table, deb.query_table) if t is not None]
    assert gradcheck(lambda q, k, v, *p: pt.attention(q, k, v, deb, key_lengths=[6, 4]), (q, k, v, *params))


def test_fire_parameters():
    fire = pt.FIRE(num_heads=H, mlp_width=4, c=0.3, threshold=3.5, dtype=torch.float64)
    with torch.no_grad():
        fire.w2.normal_()
        fire.b2.normal_()
    q, k, v = qkv()
    ps = [fire.c, fire.threshold, fire.w1, fire.b1, fire.w2, fire.b2]
    assert gradcheck(lambda q, k, v, *p: pt.attention(q, k, v, fire, causal=True), (q, k, v, *ps))


@pytest.mark.parametrize("kernel", ["logarithmic", "power"])
def test_kerple_parameters(kernel):
    kerple = pt.KERPLE(num_heads=H, kernel=kernel, dtype=torch.float64)
    with torch.no_grad():
        kerple.r1.uniform_(0.2, 1.5)
        kerple.r2.uniform_(0.2, 1.5)
    q, k, v = qkv()
    enc = pt.combine(posenc.RoPE(head_dim=D), kerple)
    assert gradcheck(lambda q, k, v, a, b: pt.attention(q, k, v, enc, causal=True), (q, k, v, kerple.r1, kerple.r2))


@pytest.mark.parametrize("gate_source", ["keys", "values"])
def test_cope_table(gate_source):
    cope = pt.CoPE(head_dim=D, npos=4, gate_source=gate_source, dtype=torch.float64)
    with torch.no_grad():
        cope.table.normal_()
    q, k, v = qkv(H)
    assert gradcheck(lambda q, k, v, t: pt.attention(q, k, v, cope, causal=True), (q, k, v, cope.table))
