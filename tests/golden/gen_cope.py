#!/usr/bin/env python3
"""Writes tests/golden/cope.json: contextual position encoding (CoPE) computed by the authors' code.

Run once with Debian's python3-torch (1.13): /usr/bin/python3 tests/golden/gen_cope.py
It reads facebookresearch/RAM (fetched to /work/.mirror/facebookresearch+RAM/repo; commit recorded
below) with git; nothing is installed. The test suite reads the JSON only.

What runs, unmodified (extracted by name, reference_source.py), from projects/cope/src:
  - cope/context_position.py: ContextPosSelfAttn (forward: gates, contextual positions, interpolated
    position logits, attention);
  - models/transformer.py: pad2attn_mask (the authors' padding mask; the decoder multiplies it by
    the causal mask, as DecoderCore does).
The module runs in float32 (`*_fp32`) and in float64 (`*_fp64full`: module.double(), float64
inputs); gradients of L = sum(out * dout) come from torch.autograd in float64. `dout` is zero on
padding query rows: the authors let a padding query attend to itself, which posenc's masks do not,
so those rows are left out of every comparison.
"""
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_source as rs  # noqa: E402

REPO = "/work/.mirror/facebookresearch+RAM/repo"
COPE_PATH = "projects/cope/src/cope/context_position.py"
TRANSFORMER_PATH = "projects/cope/src/models/transformer.py"
PRELUDE = """
import math
from typing import Optional
import torch
import torch.nn as nn
"""

COPE = rs.reference(REPO, "HEAD", COPE_PATH, ["ContextPosSelfAttn"], "ram_cope", PRELUDE)
MASKS = rs.reference(REPO, "HEAD", TRANSFORMER_PATH, ["pad2attn_mask"], "ram_transformer", PRELUDE)


def rand(gen, *shape):
    return rs.f32(torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1)


def make_mask(batch, heads, seq, pad, causal):
    """pad: None or [batch][seq] booleans (True = padding). As DecoderCore / EncoderCore build it."""
    attn_mask = None
    if pad is not None:
        attn_mask = MASKS.pad2attn_mask(torch.tensor(pad), heads, query_len=seq)
    if causal:
        causal_mask = torch.ones(seq, seq).tril().unsqueeze(0)
        attn_mask = causal_mask if attn_mask is None else attn_mask * causal_mask
    return attn_mask


def case(case_id, seed, batch, heads, seq, head_dim, npos, causal, pad=None, val_gates=False, nodiv=False):
    gen = torch.Generator().manual_seed(seed)
    cfg = types.SimpleNamespace(
        drop=0.0,
        cope_layers=1,
        pos_emb="cope",
        cope_npos=npos,
        block_size=seq,
        head_dim=head_dim,
        cope_sep_key=False,
        cope_val_gates=val_gates,
        cope_nodiv=nodiv,
    )
    module = COPE.ContextPosSelfAttn(cfg, 0).eval()
    npos_used = module.npos
    pos_emb = rand(gen, 1, head_dim, npos_used) * 2  # the parameter starts at zero in the authors' code
    # [batch * heads, seq, head_dim], row b * heads + h (the authors' split_heads order)
    q = rand(gen, batch * heads, seq, head_dim) * 2
    k = rand(gen, batch * heads, seq, head_dim) * 2
    v = rand(gen, batch * heads, seq, head_dim)
    dout = rand(gen, batch * heads, seq, head_dim)
    if pad is not None:
        for b in range(batch):
            for i in range(seq):
                if pad[b][i]:
                    dout[b * heads : (b + 1) * heads, i, :] = 0
    mask = make_mask(batch, heads, seq, pad, causal)

    with torch.no_grad():
        module.pos_emb.copy_(pos_emb.float())
        out32 = module(q.float(), k.float(), k.float(), v.float(), attn_mask=None if mask is None else mask.float())

    m64 = module.double()
    with torch.no_grad():
        m64.pos_emb.copy_(pos_emb)
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
    out64 = m64(leaves[0], leaves[1], leaves[1], leaves[2], attn_mask=None if mask is None else mask.double())
    grads = torch.autograd.grad((out64 * dout).sum(), leaves + [m64.pos_emb])
    return {
        "id": case_id,
        "batch": batch,
        "heads": heads,
        "seq": seq,
        "head_dim": head_dim,
        "npos": npos_used,
        "causal": causal,
        "padding": pad,
        "val_gates": val_gates,
        "nodiv": nodiv,
        "pos_emb": rs.to_list(pos_emb[0]),
        "q": rs.to_list(q),
        "k": rs.to_list(k),
        "v": rs.to_list(v),
        "dout": rs.to_list(dout),
        "expected": {
            "out_fp32": rs.to_list(out32.double()),
            "out_fp64full": rs.to_list(out64),
            "weights_fp64full": rs.to_list(m64.attn_saved),
            "dq_fp64full": rs.to_list(grads[0]),
            "dk_fp64full": rs.to_list(grads[1]),
            "dv_fp64full": rs.to_list(grads[2]),
            "dpos_emb_fp64full": rs.to_list(grads[3][0]),
        },
    }


def main():
    torch.set_num_threads(1)
    left = [[False] * 10, [True] * 3 + [False] * 7]
    right = [[False] * 9, [False] * 6 + [True] * 3]
    cases = [
        case("causal", 1, 2, 2, 10, 4, None, True),
        case("causal_npos_clamped", 2, 2, 2, 10, 4, 4, True),
        case("causal_left_padding", 3, 2, 2, 10, 4, 6, True, pad=left),
        case("bidirectional_right_padding", 4, 2, 2, 9, 4, 5, False, pad=right),
        case("causal_value_gates", 5, 1, 3, 9, 6, None, True, val_gates=True),
        case("causal_nodiv", 6, 1, 2, 11, 4, 7, True, nodiv=True),
    ]
    payload = {
        "family": "cope",
        "split": "reference",
        "source": {
            "repo": "facebookresearch/RAM",
            "commit": rs.full_commit(REPO, "HEAD"),
            "files": [COPE_PATH, TRANSFORMER_PATH],
            "functions": ["ContextPosSelfAttn", "pad2attn_mask"],
            "generator": "tests/golden/gen_cope.py",
        },
        "number_format": "floats are Python repr of doubles; inputs are float32-exact",
        "cases": cases,
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cope.json")
    rs.write(out, payload)
    print("wrote", out, len(cases), "cases")


if __name__ == "__main__":
    main()
