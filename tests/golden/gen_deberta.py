#!/usr/bin/env python3
"""Writes tests/golden/deberta.json: DeBERTa's relative positions and disentangled attention, computed
by the reference code itself.

Run once with Debian's python3-torch (1.13): /usr/bin/python3 tests/golden/gen_deberta.py
It needs the fetched references (read with git, nothing installed):
  transformers   /work/.mirror/zucchini-nlp+transformers/repo  at decba1d2
  microsoft/DeBERTa /work/.mirror/microsoft+DeBERTa/repo        at HEAD (recorded below)
The test suite reads the JSON only; nothing in it needs torch.

What runs, unmodified (extracted by name, reference_source.py):
  - HF deberta_v2: make_log_bucket_position, build_relative_position (the torch.jit.script functions),
    DisentangledSelfAttention (forward with output_attentions), DebertaV2Encoder.get_attention_mask;
  - HF deberta (v1): build_relative_position, DisentangledSelfAttention and its helpers;
  - microsoft/DeBERTa da_utils: make_log_bucket_position (clamps |distance| below max_position first).
The `fp64full` run is the same module in float64 (module.double(), float64 inputs), with one float32
request promoted: scaled_size_sqrt's `dtype=torch.float` (else the scale is rounded to float32).
The relative positions are computed once, as HF does (float32 log), and passed to both runs.
"""
import copy
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_source as rs  # noqa: E402

HF_REPO, HF_COMMIT = rs.TRANSFORMERS
MS_REPO = "/work/.mirror/microsoft+DeBERTa/repo"
V2_PATH = "src/transformers/models/deberta_v2/modeling_deberta_v2.py"
V1_PATH = "src/transformers/models/deberta/modeling_deberta.py"
MS_PATH = "DeBERTa/deberta/da_utils.py"
PRELUDE = """
import functools
from functools import lru_cache
import math
import torch
from torch import nn
"""

V2 = rs.reference(
    HF_REPO,
    HF_COMMIT,
    V2_PATH,
    [
        "make_log_bucket_position",
        "build_relative_position",
        "c2p_dynamic_expand",
        "p2c_dynamic_expand",
        "pos_dynamic_expand",
        "scaled_size_sqrt",
        "build_rpos",
        "DisentangledSelfAttention",
        "DebertaV2Encoder.get_attention_mask",
    ],
    "hf_deberta_v2",
    PRELUDE,
)
V1 = rs.reference(
    HF_REPO,
    HF_COMMIT,
    V1_PATH,
    [
        "build_relative_position",
        "c2p_dynamic_expand",
        "p2c_dynamic_expand",
        "pos_dynamic_expand",
        "scaled_size_sqrt",
        "build_rpos",
        "compute_attention_span",
        "uneven_size_corrected",
        "DisentangledSelfAttention",
    ],
    "hf_deberta_v1",
    PRELUDE,
)
MS = rs.reference(
    MS_REPO, "HEAD", MS_PATH, ["make_log_bucket_dict", "make_log_bucket_position"], "ms_deberta", PRELUDE
)


def promoted_scaled_size_sqrt(query_layer, scale_factor: int):
    """scaled_size_sqrt with its float32 request promoted to float64 (the fp64full run)."""
    return torch.sqrt(torch.tensor(query_layer.size(-1), dtype=torch.float64) * scale_factor)


# ---- buckets: every distance of [-R, R], computed the way each reference computes them ----


def hf_buckets(bucket_size, max_position, reach):
    """HF: build_relative_position on a sequence of reach + 1 tokens (q - k over [-reach, reach])."""
    x = torch.zeros(1, reach + 1, 1)
    rel = V2.build_relative_position(x, x, bucket_size=bucket_size, max_position=max_position)[0]
    # row `reach`: q - k = reach .. 0; row 0: 0 .. -reach
    up = rel[reach].flip(0).tolist()  # distances 0 .. reach
    down = rel[0].tolist()  # distances 0 .. -reach
    return list(reversed(down[1:])) + up


def ms_buckets(bucket_size, max_position, reach):
    rel = torch.arange(-reach, reach + 1)[None, :]
    return MS.make_log_bucket_position(rel, bucket_size, max_position)[0].tolist()


BUCKET_CONFIGS = [  # (position_buckets, max_relative_positions)
    (256, 512),  # DeBERTa-v3 base/large/xsmall, mDeBERTa-v3 (config.json)
    (4, 8),  # the layer cases below
    (8, 12),
    (32, 64),
    (64, 128),
    (128, 512),
    (6, 1000),
    (256, 1024),
]


def bucket_cases():
    cases = []
    for buckets, max_pos in BUCKET_CONFIGS:
        reach = 2 * max_pos + 16
        cases.append(
            {
                "id": f"buckets_{buckets}_{max_pos}",
                "kind": "buckets",
                "position_buckets": buckets,
                "max_relative_positions": max_pos,
                "relative_position_first": -reach,
                "expected": {"hf": hf_buckets(buckets, max_pos, reach), "microsoft": ms_buckets(buckets, max_pos, reach)},
            }
        )
    return cases


# ---- whole attention layers ----


def rand(gen, *shape):
    return rs.f32(torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1)


def set_parameters(module, gen):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(rand(gen, *p.shape).float())


def padding_mask(batch, seq, lengths):
    m = torch.zeros(batch, seq, dtype=torch.long)
    for b, n in enumerate(lengths):
        m[b, :n] = 1
    return m


def run_layer(module_lib, module, hidden, mask4, relative_pos, rel_emb):
    out = {}
    ctx, probs = module(hidden.float(), mask4, output_attentions=True, relative_pos=relative_pos, rel_embeddings=rel_emb.float())
    out["context_fp32"] = rs.to_list(ctx.double())
    saved = module_lib.scaled_size_sqrt
    module_lib.scaled_size_sqrt = promoted_scaled_size_sqrt
    try:
        m64 = copy.deepcopy(module).double()
        ctx64, probs64 = m64(hidden, mask4, output_attentions=True, relative_pos=relative_pos, rel_embeddings=rel_emb)
    finally:
        module_lib.scaled_size_sqrt = saved
    out["context_fp64full"] = rs.to_list(ctx64)
    out["probs_fp64full"] = rs.to_list(probs64)
    return out


def named(module, names):
    return {n: rs.to_list(dict(module.named_parameters())[n].double()) for n in names if n in dict(module.named_parameters())}


def v2_case(case_id, seed, share, pos_att_type, buckets, max_rel, seq, lengths, heads=2, head_dim=4):
    gen = torch.Generator().manual_seed(seed)
    hidden_size = heads * head_dim
    cfg = types.SimpleNamespace(
        hidden_size=hidden_size,
        num_attention_heads=heads,
        share_att_key=share,
        pos_att_type=pos_att_type,
        relative_attention=True,
        position_buckets=buckets,
        max_relative_positions=max_rel,
        max_position_embeddings=512,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    module = V2.DisentangledSelfAttention(cfg).eval()
    set_parameters(module, gen)
    span = buckets if buckets > 0 else max_rel
    hidden = rand(gen, len(lengths), seq, hidden_size)
    rel_emb = rand(gen, 2 * span, hidden_size)
    mask2 = padding_mask(len(lengths), seq, lengths)
    mask4 = V2.get_attention_mask(None, mask2)
    relative_pos = V2.build_relative_position(hidden.float(), hidden.float(), bucket_size=buckets, max_position=max_rel)
    expected = run_layer(V2, module, hidden, mask4, relative_pos, rel_emb)
    expected["relative_pos"] = rs.to_list(relative_pos[0])
    return {
        "id": case_id,
        "kind": "layer",
        "version": "v2",
        "config": {
            "hidden_size": hidden_size,
            "num_attention_heads": heads,
            "share_att_key": share,
            "pos_att_type": pos_att_type,
            "position_buckets": buckets,
            "max_relative_positions": max_rel,
        },
        "batch": len(lengths),
        "seq": seq,
        "lengths": lengths,
        "hidden_states": rs.to_list(hidden),
        "rel_embeddings": rs.to_list(rel_emb),
        "parameters": named(
            module,
            [
                "query_proj.weight",
                "query_proj.bias",
                "key_proj.weight",
                "key_proj.bias",
                "value_proj.weight",
                "value_proj.bias",
                "pos_key_proj.weight",
                "pos_key_proj.bias",
                "pos_query_proj.weight",
                "pos_query_proj.bias",
            ],
        ),
        "expected": expected,
    }


def v1_case(case_id, seed, pos_att_type, max_rel, seq, lengths, heads=2, head_dim=4):
    gen = torch.Generator().manual_seed(seed)
    hidden_size = heads * head_dim
    cfg = types.SimpleNamespace(
        hidden_size=hidden_size,
        num_attention_heads=heads,
        pos_att_type=pos_att_type,
        relative_attention=True,
        talking_head=False,
        max_relative_positions=max_rel,
        max_position_embeddings=512,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    module = V1.DisentangledSelfAttention(cfg).eval()
    set_parameters(module, gen)
    hidden = rand(gen, len(lengths), seq, hidden_size)
    rel_emb = rand(gen, 2 * max_rel, hidden_size)
    mask2 = padding_mask(len(lengths), seq, lengths)
    mask4 = V2.get_attention_mask(None, mask2)  # DebertaEncoder.get_attention_mask is the same code
    relative_pos = V1.build_relative_position(hidden.float(), hidden.float())
    expected = run_layer(V1, module, hidden, mask4, relative_pos, rel_emb)
    return {
        "id": case_id,
        "kind": "layer",
        "version": "v1",
        "config": {
            "hidden_size": hidden_size,
            "num_attention_heads": heads,
            "pos_att_type": pos_att_type,
            "max_relative_positions": max_rel,
        },
        "batch": len(lengths),
        "seq": seq,
        "lengths": lengths,
        "hidden_states": rs.to_list(hidden),
        "rel_embeddings": rs.to_list(rel_emb),
        "parameters": named(
            module, ["in_proj.weight", "q_bias", "v_bias", "pos_proj.weight", "pos_q_proj.weight", "pos_q_proj.bias"]
        ),
        "expected": expected,
    }


def layer_cases():
    both, c2p, p2c = ["c2p", "p2c"], ["c2p"], ["p2c"]
    lengths = [16, 11]
    return [
        v2_case("v2_shared_c2p_p2c", 1, True, both, 4, 8, 16, lengths),
        v2_case("v2_separate_c2p_p2c", 2, False, both, 4, 8, 16, lengths),
        v2_case("v2_shared_c2p", 3, True, c2p, 4, 8, 16, lengths),
        v2_case("v2_shared_p2c", 4, True, p2c, 4, 8, 16, lengths),
        v2_case("v2_separate_c2p", 5, False, c2p, 4, 8, 16, lengths),
        v2_case("v2_separate_p2c", 6, False, p2c, 4, 8, 16, lengths),
        v2_case("v2_no_cross_terms", 7, True, [], 4, 8, 16, lengths),
        v2_case("v2_no_buckets", 8, False, both, -1, 6, 12, [12, 9]),
        v2_case("v2_buckets_8_12", 9, True, both, 8, 12, 30, [30, 21]),
        v1_case("v1_c2p_p2c_clamped", 10, both, 6, 12, [12, 8]),
        v1_case("v1_c2p_p2c_wide", 11, both, 16, 10, [10, 7]),
        v1_case("v1_c2p", 12, c2p, 6, 12, [12, 8]),
        v1_case("v1_p2c", 13, p2c, 6, 12, [12, 8]),
    ]


def main():
    torch.set_num_threads(1)
    payload = {
        "family": "deberta",
        "split": "reference",
        "source": {
            "transformers": {
                "repo": "huggingface/transformers (fork zucchini-nlp/transformers)",
                "commit": rs.full_commit(HF_REPO, HF_COMMIT),
                "files": [V2_PATH, V1_PATH],
            },
            "microsoft": {"repo": "microsoft/DeBERTa", "commit": rs.full_commit(MS_REPO, "HEAD"), "file": MS_PATH},
            "generator": "tests/golden/gen_deberta.py",
        },
        "number_format": "floats are Python repr of doubles; inputs are float32-exact",
        "cases": bucket_cases() + layer_cases(),
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deberta.json")
    rs.write(out, payload)
    print("wrote", out, len(payload["cases"]), "cases")


if __name__ == "__main__":
    main()
