#!/usr/bin/env python3
"""Writes tests/golden/vision_rope.json: the rotary embeddings of vision towers, computed by the
Hugging Face code itself.

Run once with Debian's python3-torch (1.13): /usr/bin/python3 tests/golden/gen_vision_rope.py
It reads transformers at decba1d2 (/work/.mirror/zucchini-nlp+transformers/repo) with git; nothing is
installed. The test suite reads the JSON only.

What runs (extracted by name, reference_source.py), composed exactly as each vision model's forward
composes them:
  - Pixtral (models/pixtral/modeling_pixtral.py): position_ids_in_meshgrid, PixtralRotaryEmbedding
    (compute_default_rope_parameters + forward), apply_rotary_pos_emb(unsqueeze_dim=0);
  - Qwen2-VL / Qwen2.5-VL / Qwen3-VL (models/qwen*_vl/modeling_*.py, vision_utils.py):
    get_vision_position_ids, the VisionRotaryEmbedding of each model, apply_rotary_pos_emb_vision,
    and for Qwen2.5-VL get_vision_window_index with the merge-unit permutation of the forward;
  - Llama 4 (models/llama4/modeling_llama4.py): Llama4VisionRotaryEmbedding, vision_apply_rotary_emb;
  - MiniMax-M3-VL (models/minimax_m3_vl/modeling_minimax_m3_vl.py): MiniMaxM3VL3DRotaryEmbedding
    (t, h, w), apply_rotary_pos_emb_vision.
`*_fp32` is the code as written (float32). `*_fp64full` is the same code with its float32 requests
promoted to float64 (`.float()` -> `.double()`, `dtype=torch.float`/`float32` -> `float64`, a
textual substitution in the extracted source) and float64 inputs.
Shims (absent from torch 1.13 or outside the extracted code): nn.Buffer returns its tensor;
deprecate_kwarg, dynamic_rope_update and maybe_autocast do nothing; config classes are namespaces.
"""
import os
import re
import sys
import types

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_source as rs  # noqa: E402

REPO, COMMIT = rs.TRANSFORMERS
PATHS = {
    "pixtral": "src/transformers/models/pixtral/modeling_pixtral.py",
    "qwen2_vl": "src/transformers/models/qwen2_vl/modeling_qwen2_vl.py",
    "qwen2_5_vl": "src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py",
    "qwen3_vl": "src/transformers/models/qwen3_vl/modeling_qwen3_vl.py",
    "llama4": "src/transformers/models/llama4/modeling_llama4.py",
    "minimax_m3_vl": "src/transformers/models/minimax_m3_vl/modeling_minimax_m3_vl.py",
    "vision_utils": "src/transformers/vision_utils.py",
}
PRELUDE = """
import contextlib
from collections.abc import Callable
import torch
import torch.nn as nn
import torch.nn.functional as F

if not hasattr(nn, "Buffer"):
    nn.Buffer = lambda data, persistent=True: data

def deprecate_kwarg(*args, **kwargs):
    return lambda f: f

def dynamic_rope_update(f):
    return f

def maybe_autocast(*args, **kwargs):
    return contextlib.nullcontext()

PixtralVisionConfig = Llama4VisionConfig = object
"""

NAMES = {
    "pixtral": ["position_ids_in_meshgrid", "PixtralRotaryEmbedding", "rotate_half", "apply_rotary_pos_emb"],
    "qwen2_vl": ["VisionRotaryEmbedding", "rotate_half", "apply_rotary_pos_emb_vision"],
    "qwen2_5_vl": ["Qwen2_5_VisionRotaryEmbedding", "rotate_half", "apply_rotary_pos_emb_vision"],
    "qwen3_vl": ["Qwen3VLVisionRotaryEmbedding", "rotate_half", "apply_rotary_pos_emb_vision"],
    "llama4": ["Llama4VisionRotaryEmbedding", "reshape_for_broadcast", "vision_apply_rotary_emb"],
    "minimax_m3_vl": ["MiniMaxM3VL3DRotaryEmbedding", "rotate_half", "apply_rotary_pos_emb_vision"],
    "vision_utils": ["get_vision_position_ids", "get_vision_window_index"],
}


def promote(text):
    text = text.replace(".float()", ".double()")
    text = re.sub(r"dtype=torch\.float(32)?\b", "dtype=torch.float64", text)
    return text


def load_all():
    mods = {}
    for key, path in PATHS.items():
        pieces = rs.extract(rs.git_show(REPO, COMMIT, path), NAMES[key])
        if key == "vision_utils":
            pieces = [p.replace("kwargs: dict | None = None", "kwargs=None") for p in pieces]
        mods[key] = rs.load(f"hf_{key}_fp32", PRELUDE, pieces)
        mods[key + "_fp64"] = rs.load(f"hf_{key}_fp64", PRELUDE, [promote(p) for p in pieces])
    for sfx in ("", "_fp64"):  # the 3D rotary calls vision_utils' function, imported by its module
        mods["minimax_m3_vl" + sfx].get_vision_position_ids = mods["vision_utils" + sfx].get_vision_position_ids
    return mods


M = load_all()


def rand(gen, *shape):
    return rs.f32(torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1)


def outputs(fn, q, k):
    """fn(mod_suffix, q, k) -> (q_out, k_out) for the fp32 and fp64full runs (k = q: the reference
    rotates keys as it rotates queries, so one output per precision is stored)."""
    q32, k32 = fn("", q.float(), k.float())
    q64, k64 = fn("_fp64", q, k)
    assert torch.equal(q32, k32) and torch.equal(q64, k64)  # k = q: one rotation, stored once
    return {"out_fp32": rs.to_list(q32.double()), "out_fp64full": rs.to_list(q64)}


def pixtral_case(case_id, seed, grids, heads=2, head_dim=16, image_size=64, patch_size=8, theta=10000.0):
    gen = torch.Generator().manual_seed(seed)
    cfg = types.SimpleNamespace(
        rope_parameters={"rope_type": "default", "rope_theta": theta},
        head_dim=head_dim,
        hidden_size=heads * head_dim,
        num_attention_heads=heads,
        image_size=image_size,
        patch_size=patch_size,
    )
    max_width = image_size // patch_size
    patches = [torch.zeros(1, h, w) for h, w in grids]
    ids = M["pixtral"].position_ids_in_meshgrid(patches, max_width=max_width)
    n = ids.numel()
    q = rand(gen, 1, heads, n, head_dim)
    k = q

    def run(sfx, q, k):
        mod = M["pixtral" + sfx]
        emb = mod.PixtralRotaryEmbedding(cfg)
        cos, sin = emb(q, ids)
        return mod.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=0)

    return {
        "id": case_id,
        "convention": "pixtral",
        "layout": "[1, heads, tokens, head_dim]",
        "heads": heads,
        "head_dim": head_dim,
        "theta": theta,
        "image_size": image_size,
        "patch_size": patch_size,
        "grids_hw": grids,
        "position_ids": rs.to_list(ids),
        "x": rs.to_list(q),
        "expected": outputs(run, q, k),
    }


def qwen_case(case_id, seed, model, grids_thw, merge, heads=1, head_dim=16, window=None, patch_size=14):
    gen = torch.Generator().manual_seed(seed)
    grid = torch.tensor(grids_thw)
    pos = M["vision_utils"].get_vision_position_ids(grid, merge)
    n = pos.shape[0]
    rot_cls = {
        "qwen2_vl": "VisionRotaryEmbedding",
        "qwen2_5_vl": "Qwen2_5_VisionRotaryEmbedding",
        "qwen3_vl": "Qwen3VLVisionRotaryEmbedding",
    }[model]
    extra = {}
    window_index = None
    if window is not None:
        window_index, cu = M["vision_utils"].get_vision_window_index(
            grid, spatial_merge_size=merge, window_size=window, patch_size=patch_size
        )
        extra = {"window_size": window, "patch_size": patch_size, "window_index": rs.to_list(window_index), "cu_window_seqlens": rs.to_list(cu)}
    q = rand(gen, n, heads, head_dim)
    k = q

    def run(sfx, q, k):
        mod = M[model + sfx]
        rot = getattr(mod, rot_cls)(head_dim // 2)
        rpe = rot(pos)
        if window_index is not None:  # Qwen2_5_VisionTransformerPretrainedModel.forward
            unit = merge * merge
            rpe = rpe.reshape(n // unit, unit, -1)[window_index, :, :].reshape(n, -1)
        emb = torch.cat((rpe, rpe), dim=-1)
        return mod.apply_rotary_pos_emb_vision(q, k, emb.cos(), emb.sin())

    return {
        "id": case_id,
        "convention": "qwen_vl",
        "model": model,
        "layout": "[tokens, heads, head_dim] (tokens in the order the vision blocks see them)",
        "heads": heads,
        "head_dim": head_dim,
        "theta": 10000.0,
        "grid_thw": grids_thw,
        "spatial_merge_size": merge,
        "position_ids_hw": rs.to_list(pos),
        **extra,
        "x": rs.to_list(q),
        "expected": outputs(run, q, k),
    }


def llama4_case(case_id, seed, heads=2, head_dim=16, image_size=32, patch_size=8, theta=10000.0):
    gen = torch.Generator().manual_seed(seed)
    cfg = types.SimpleNamespace(
        image_size=image_size,
        patch_size=patch_size,
        hidden_size=heads * head_dim,
        num_attention_heads=heads,
        rope_parameters={"rope_theta": theta},
    )
    n = (image_size // patch_size) ** 2 + 1
    q = rand(gen, 1, n, heads, head_dim)
    k = q

    def run(sfx, q, k):
        mod = M["llama4" + sfx]
        freqs = mod.Llama4VisionRotaryEmbedding(cfg)(q)
        return mod.vision_apply_rotary_emb(q, k, freqs)

    return {
        "id": case_id,
        "convention": "llama4",
        "layout": "[1, tokens, heads, head_dim] (patches in raster order, the class token last)",
        "heads": heads,
        "head_dim": head_dim,
        "theta": theta,
        "image_size": image_size,
        "patch_size": patch_size,
        "x": rs.to_list(q),
        "expected": outputs(run, q, k),
    }


def minimax_case(case_id, seed, grids_thw, merge, heads=1, head_dim=20, theta=10000.0):
    gen = torch.Generator().manual_seed(seed)
    grid = torch.tensor(grids_thw)
    pos = M["vision_utils"].get_vision_position_ids(grid, merge, include_temporal=True)
    n = pos.shape[0]
    q = rand(gen, 1, n, heads, head_dim)
    k = q

    def run(sfx, q, k):
        mod = M["minimax_m3_vl" + sfx]
        rot = mod.MiniMaxM3VL3DRotaryEmbedding(head_dim, theta=theta, spatial_merge_size=merge)
        cos, sin = rot(grid, device=q.device, dtype=q.dtype)
        return mod.apply_rotary_pos_emb_vision(q, k, cos, sin)

    return {
        "id": case_id,
        "convention": "minimax_m3_vl",
        "layout": "[1, tokens, heads, head_dim]",
        "heads": heads,
        "head_dim": head_dim,
        "theta": theta,
        "grid_thw": grids_thw,
        "spatial_merge_size": merge,
        "position_ids_thw": rs.to_list(pos),
        "x": rs.to_list(q),
        "expected": outputs(run, q, k),
    }


def main():
    torch.set_num_threads(1)
    cases = [
        pixtral_case("pixtral_two_images", 1, [[3, 5], [8, 2]]),
        pixtral_case("pixtral_large_grid", 2, [[7, 8]], heads=1, head_dim=32, image_size=1024, patch_size=16),
        qwen_case("qwen2_vl_image_and_video", 3, "qwen2_vl", [[1, 4, 6], [3, 4, 4]], 2, heads=2),
        qwen_case("qwen2_vl_merge_1", 4, "qwen2_vl", [[1, 3, 5]], 1, heads=1, head_dim=8),
        qwen_case("qwen2_5_vl_windows", 5, "qwen2_5_vl", [[1, 4, 10], [2, 4, 6]], 2, window=56),
        qwen_case("qwen3_vl_image_and_video", 6, "qwen3_vl", [[2, 6, 4], [1, 2, 8]], 2),
        llama4_case("llama4_tile", 7),
        llama4_case("llama4_tile_36", 8, heads=1, head_dim=24, image_size=48, patch_size=8, theta=500000.0),
        minimax_case("minimax_m3_vl_video", 9, [[3, 4, 4], [1, 2, 6]], 2),
        minimax_case("minimax_m3_vl_head_dim_80", 10, [[2, 2, 4]], 1, heads=1, head_dim=80),
    ]
    payload = {
        "family": "vision_rope",
        "split": "reference",
        "source": {
            "repo": "huggingface/transformers (fork zucchini-nlp/transformers)",
            "commit": rs.full_commit(REPO, COMMIT),
            "files": list(PATHS.values()),
            "generator": "tests/golden/gen_vision_rope.py",
        },
        "number_format": "floats are Python repr of doubles; inputs are float32-exact",
        "cases": cases,
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vision_rope.json")
    rs.write(out, payload)
    print("wrote", out, len(cases), "cases")


if __name__ == "__main__":
    main()
