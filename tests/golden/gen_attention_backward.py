#!/usr/bin/env python3
"""Writes tests/golden/attention_backward.json: gradients of attention by PyTorch autograd (float64).

Run once with PyTorch (Debian python3-torch 1.13): python3 tests/golden/gen_attention_backward.py
The test suite reads the JSON only; nothing in it needs torch.

Each case builds the forward of docs/attention.md in torch, independently of posenc:
  logits = cap(scale * (q.k + q.aK)) + bias, masked keys -inf, sinks appended as one more logit
  column per head (gpt-oss: the column takes mass and is dropped after the softmax),
  out = P (V + aV), loss = sum(out * dout),
and stores torch.autograd.grad of the loss w.r.t. q, k, v, the sinks and the tables.
"""
import json
import math

import torch

torch.set_default_dtype(torch.float64)


class uniform_source:
    """Seeded uniform draws (torch.Generator), rounded to float32-exact doubles so fp32 and fp64
    implementations read identical inputs."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def uniform(self, lo, hi, shape):
        if isinstance(shape, int):
            shape = (shape,)
        x = torch.rand(shape, generator=self.g, dtype=torch.float64) * (hi - lo) + lo
        return x.float().double()


def rope_half_split(x, pos, theta):
    """HF rotate_half RoPE on [B, S, H, D] at positions pos [B, S]."""
    D = x.shape[-1]
    inv = theta ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    ang = pos[..., None].double() * inv  # [B, S, D/2]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, :, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, :, None, :]
    x1, x2 = x[..., : D // 2], x[..., D // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def t5_bucket(rel, num_buckets, max_distance):
    """HF T5Attention._relative_position_bucket, bidirectional (rel = key - query)."""
    num_buckets //= 2
    ret = (rel > 0).long() * num_buckets
    n = rel.abs()
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    return ret + torch.where(is_small, n, val_if_large)


def attention(q, k, v, pq, pk, causal, scale, cap=None, bias=None, sinks=None, ak=None, av=None, k_max=0):
    """q [B,Sq,Hq,D], k [B,Sk,Hkv,D], v [B,Sk,Hkv,Dv]; bias(h, i, j) as a [B,Hq,Sq,Sk] tensor or None."""
    B, Sq, Hq, D = q.shape
    Hkv = k.shape[2]
    G = Hq // Hkv
    kk = k.repeat_interleave(G, dim=2)  # query head h reads kv head h // G
    vv = v.repeat_interleave(G, dim=2)
    s = torch.einsum("bihd,bjhd->bhij", q, kk)
    dist = pk[:, None, :] - pq[:, :, None]  # [B, Sq, Sk]: key - query
    if ak is not None:
        idx = dist.clamp(-k_max, k_max) + k_max
        s = s + torch.einsum("bihd,bijd->bhij", q, ak[idx])
    s = scale * s
    if cap is not None:
        s = cap * torch.tanh(s / cap)
    if bias is not None:
        s = s + bias
    if causal:
        s = s.masked_fill((dist > 0)[:, None, :, :], float("-inf"))
    if sinks is not None:
        col = sinks[None, :, None, None].expand(B, Hq, Sq, 1)
        p = torch.softmax(torch.cat([s, col], -1), -1)[..., :-1]
    else:
        p = torch.softmax(s, -1)
    out = torch.einsum("bhij,bjhd->bihd", p, vv)
    if av is not None:
        idx = dist.clamp(-k_max, k_max) + k_max
        out = out + torch.einsum("bhij,bijd->bihd", p, av[idx])
    return out


def case(cid, rng, B, Sq, Sk, Hq, Hkv, D, Dv, build):
    q = rng.uniform(-2, 2, (B, Sq, Hq, D)).requires_grad_()
    k = rng.uniform(-2, 2, (B, Sk, Hkv, D)).requires_grad_()
    v = rng.uniform(-1, 1, (B, Sk, Hkv, Dv)).requires_grad_()
    dout = rng.uniform(-1, 1, (B, Sq, Hq, Dv))
    params, extra, out = build(q, k, v, rng)
    loss = (out * dout).sum()
    names = list(params.keys())
    grads = torch.autograd.grad(loss, [q, k, v] + [params[n] for n in names])
    c = {
        "id": cid,
        "shape": {"B": B, "Sq": Sq, "Sk": Sk, "Hq": Hq, "Hkv": Hkv, "D": D, "Dv": Dv},
        "q": q.detach().tolist(),
        "k": k.detach().tolist(),
        "v": v.detach().tolist(),
        "dout": dout.tolist(),
        "out_fp64": out.detach().tolist(),
        "dq_fp64": grads[0].tolist(),
        "dk_fp64": grads[1].tolist(),
        "dv_fp64": grads[2].tolist(),
    }
    for n, g in zip(names, grads[3:]):
        c[n] = params[n].detach().tolist()
        c["d" + n + "_fp64"] = g.tolist()
    c.update(extra)
    return c


def main():
    rng = uniform_source(20261202)
    cases = []

    # 1. GQA, bottom-right causal, soft-cap, sinks, a linear bias slope_h * (pos_k - pos_q).
    def softcap_sinks(q, k, v, rng):
        B, Sq, Hq, D = q.shape
        Sk = k.shape[1]
        pq = torch.arange(Sk - Sq, Sk)[None, :].expand(B, Sq)
        pk = torch.arange(Sk)[None, :].expand(B, Sk)
        sinks = rng.uniform(-1, 2, Hq).requires_grad_()
        slopes = rng.uniform(0.1, 0.6, Hq)
        dist = (pk[:, None, :] - pq[:, :, None]).double()
        bias = slopes[None, :, None, None] * dist[:, None, :, :]
        out = attention(q, k, v, pq, pk, True, 1 / math.sqrt(D), cap=2.5, bias=bias, sinks=sinks)
        return {"sinks": sinks}, {"slopes": slopes.tolist(), "logit_softcap": 2.5}, out

    cases.append(case("gqa_causal_softcap_sinks_linear_bias", rng, 2, 5, 7, 4, 2, 8, 6, softcap_sinks))

    # 2. Shaw (tensor2tensor, k_max = 2): key and value tables, no mask, MHA.
    def shaw(q, k, v, rng):
        B, Sq, Hq, D = q.shape
        Sk = k.shape[1]
        pq = torch.arange(Sk - Sq, Sk)[None, :].expand(B, Sq)
        pk = torch.arange(Sk)[None, :].expand(B, Sk)
        ak = rng.uniform(-1, 1, (5, D)).requires_grad_()
        av = rng.uniform(-1, 1, (5, D)).requires_grad_()
        out = attention(q, k, v, pq, pk, False, 1 / math.sqrt(D), ak=ak, av=av, k_max=2)
        return {"shaw_key_table": ak, "shaw_value_table": av}, {"k_max": 2}, out

    cases.append(case("shaw_key_value_k2", rng, 1, 6, 6, 2, 2, 8, 8, shaw))

    # 3. RoPE (theta 10000, half split) on q and k, then a T5 table bias (bidirectional, 8 buckets,
    #    max_distance 12), causal, MQA, explicit scale 1 (T5's).
    def rope_t5(q, k, v, rng):
        B, Sq, Hq, D = q.shape
        Sk = k.shape[1]
        pq = torch.arange(Sk - Sq, Sk)[None, :].expand(B, Sq)
        pk = torch.arange(Sk)[None, :].expand(B, Sk)
        table = rng.uniform(-1, 1, (8, Hq)).requires_grad_()
        bucket = t5_bucket(pk[:, None, :] - pq[:, :, None], 8, 12)  # [B, Sq, Sk]
        bias = table[bucket].permute(0, 3, 1, 2)  # [B, Hq, Sq, Sk]
        out = attention(rope_half_split(q, pq, 10000.0), rope_half_split(k, pk, 10000.0), v, pq, pk, True, 1.0,
                        bias=bias)
        return {"t5_table": table}, {"t5": {"num_buckets": 8, "max_distance": 12, "bidirectional": True}}, out

    cases.append(case("rope_t5_causal_mqa", rng, 1, 9, 16, 3, 1, 8, 4, rope_t5))

    doc = {
        "family": "attention_backward",
        "split": "reference",
        "source": {
            "repo": "pytorch/pytorch",
            "version": torch.__version__,
            "function": "torch.autograd.grad of sum(out * dout), forward written in this generator "
            "(tests/golden/gen_attention_backward.py); T5 buckets: HF T5Attention._relative_position_bucket",
        },
        "number_format": "python repr of IEEE-754 doubles; inputs float32-exact",
        "cases": cases,
    }
    with open(__file__.replace("gen_attention_backward.py", "attention_backward.json"), "w") as f:
        json.dump(doc, f, indent=None)
        f.write("\n")


if __name__ == "__main__":
    main()
