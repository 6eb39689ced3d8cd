"""posenc.torch.attention in float32 (the fused forward and attention_backward) against plain-PyTorch
autograd of the reference attention (reference.py) in float64 on the same float32 inputs.

Bounds, from posenc's stated ones (docs/training.md, attention.hpp), with A = max |logit|:
out within 2e-6 (1 + A) max|v| (test_reference.py explains the 2e-6); every gradient tensor within
4e-6 (1 + A) max|g| where g is that reference gradient: the fused backward's 1e-6 (1 + A) max|g|
against its double oracle, plus the float32 rotation of q and k and the float32 out and
log-sum-exp it starts from."""

import threading
import time

import pytest
import torch

import posenc
import posenc.torch as pt
import reference as ref

torch.manual_seed(2)


def logit_max(q, k, scale):
    s = torch.einsum("bihd,bjhd->bhij", q.double(), k.double().repeat_interleave(q.shape[2] // k.shape[2], 2))
    return float(s.abs().max()) * scale


def close(got, want, A, factor):
    bound = factor * (1 + A) * float(want.abs().max())
    err = float((got.double() - want).abs().max())
    assert err <= bound, f"{err} > {bound}"


@pytest.mark.parametrize("case", ["alibi_rope", "t5", "shaw", "sinks_gqa_softcap"])
def test_fused_op_equals_torch_autograd(case):
    B, S, H, D = 2, 80, 4, 32
    Hkv = 2 if case == "sinks_gqa_softcap" else H
    q32, k32, v32 = (torch.randn(B, S, h, D) for h in (H, Hkv, Hkv))
    q64, k64, v64 = (x.double().requires_grad_() for x in (q32, k32, v32))
    q, k, v = (x.clone().requires_grad_() for x in (q32, k32, v32))
    pos = torch.arange(S)
    p2 = pos.repeat(B, 1)
    kw, rkw, enc, params, rparams = {}, {}, None, [], []
    qr, kr = q64, k64
    if case == "alibi_rope":
        enc = posenc.combine(posenc.RoPE(head_dim=D), posenc.ALiBi(num_heads=H))
        inv = ref.rope_inv_freq(D, 1e4)
        qr, kr = ref.rope_half_split(q64, p2, inv), ref.rope_half_split(k64, p2, inv)
        rkw["bias"] = ref.alibi_bias(H, pos, pos)
    elif case == "t5":
        enc = pt.T5Bias(num_heads=H, bidirectional=False)
        w64 = enc.weight.detach().double().requires_grad_()
        params, rparams = [enc.weight], [w64]
        rkw["bias"] = ref.t5_bias(w64, pos, pos, bidirectional=False)
    elif case == "shaw":
        enc = pt.ShawRelative(head_dim=D, max_relative_position=6)
        kt, vt = (t.detach().double().requires_grad_() for t in (enc.key_table, enc.value_table))
        params, rparams = [enc.key_table, enc.value_table], [kt, vt]
        rkw["shaw"] = (ref.shaw_index(pos, pos, 6), kt, vt)
    else:
        sinks = torch.randn(H, requires_grad=True)
        s64 = sinks.detach().double().requires_grad_()
        params, rparams = [sinks], [s64]
        kw.update(softcap=4.0, sinks=sinks)
        rkw.update(softcap=4.0, sinks=s64)
    out, lse = pt.attention(q, k, v, enc, causal=True, return_lse=True, **kw)
    want, want_lse = ref.attention(qr, kr, v64, causal=True, return_lse=True, **rkw)
    A = logit_max(qr, kr, D ** -0.5) + (float(rkw["bias"].abs().max()) if "bias" in rkw else 0)
    if "shaw" in rkw:
        A += logit_max(q64, rkw["shaw"][1][None, :, None, :].expand(B, -1, Hkv, -1), D ** -0.5)
    close(out, want, A, 2e-6)
    assert float((lse.double() - want_lse).abs().max()) <= 2e-6 * (1 + A)
    gout = torch.randn_like(want)
    (out * gout.float()).sum().backward()
    (want * gout).sum().backward()
    for got, exp in zip([q.grad, k.grad, v.grad] + [p.grad for p in params],
                        [q64.grad, k64.grad, v64.grad] + [p.grad for p in rparams]):
        assert got.shape == exp.shape and got.dtype == torch.float32
        close(got, exp, A, 4e-6)


def test_float32_matches_float64_oracle_and_layouts():
    B, S, H, D = 1, 64, 2, 16
    q, k, v = (torch.randn(B, H, S, D, requires_grad=True) for _ in range(3))
    enc = posenc.combine(posenc.RoPE(head_dim=D), posenc.ALiBi(num_heads=H))
    out = pt.attention(q, k, v, enc, causal=True, layout="bhsd")
    assert out.shape == (B, H, S, D)
    out.square().sum().backward()
    qd, kd, vd = (x.detach().double().requires_grad_() for x in (q, k, v))
    o64 = pt.attention(qd, kd, vd, enc, causal=True, layout="bhsd")
    o64.square().sum().backward()
    assert float((out.double() - o64).abs().max()) < 1e-5
    for a, b in ((q.grad, qd.grad), (k.grad, kd.grad), (v.grad, vd.grad)):
        assert float((a.double() - b).abs().max()) < 1e-4 * float(b.abs().max())


def test_thread_counts_give_identical_bits():
    q, k, v = (torch.randn(2, 200, 4, 32) for _ in range(3))
    enc = posenc.RoPE(head_dim=32)
    results = []
    for n in (1, 2):
        posenc.set_num_threads(n)
        qq, kk, vv = (x.clone().requires_grad_() for x in (q, k, v))
        out = pt.attention(qq, kk, vv, enc, causal=True)
        out.sum().backward()
        results.append((out, qq.grad, kk.grad, vv.grad))
    posenc.set_num_threads(0)
    for a, b in zip(*results):
        assert torch.equal(a, b)


def test_gil_is_released_while_posenc_computes():
    # A thread that stamps the clock every millisecond keeps stamping during one long posenc call only
    # if the call released the GIL (holding it, the thread could not run a line of Python until the end).
    q, k, v = (torch.randn(1, 4096, 4, 64) for _ in range(3))
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.02)
    start = time.perf_counter()
    posenc.attention(q, k, v, None, causal=True)
    end = time.perf_counter()
    stop.set()
    t.join()
    inside = [x for x in ticks if start < x < end]
    assert len(inside) >= max(3, 0.1 * (end - start) / 0.001), (len(inside), end - start)


def test_training_step_reduces_loss():
    torch.manual_seed(3)
    B, S, H, D = 4, 32, 2, 16
    wq, wk, wv = (torch.nn.Linear(H * D, H * D) for _ in range(3))
    t5 = pt.T5Bias(num_heads=H, bidirectional=False)
    sinks = torch.nn.Parameter(torch.zeros(H))
    opt = torch.optim.Adam([*wq.parameters(), *wk.parameters(), *wv.parameters(), t5.weight, sinks], lr=1e-2)
    x = torch.randn(B, S, H * D)
    target = torch.randn(B, S, H * D)
    losses = []
    for _ in range(20):
        q, k, v = (w(x).view(B, S, H, D) for w in (wq, wk, wv))
        y = pt.attention(q, k, v, pt.combine(posenc.RoPE(head_dim=D), t5), causal=True, sinks=sinks)
        loss = torch.nn.functional.mse_loss(y.reshape(B, S, -1), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.9 * losses[0]
    assert t5.weight.grad is not None and sinks.grad is not None
