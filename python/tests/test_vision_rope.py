"""posenc.VisionRoPE and posenc.VisionPositions: 2D/3D RoPE of vision towers (docs/spec.md §7.9)
against the Hugging Face code itself (tests/golden/vision_rope.json: Pixtral, Qwen2-VL, Qwen2.5-VL
windows, Qwen3-VL, Llama 4 with its class token, MiniMax-M3-VL video), against the table of §7.9
written out in numpy, the encoder inside sdpa and the fused attention (equal to rotating q and k
first), and the argument errors."""

import json
import os

import numpy as np
import pytest

import posenc

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden")
CASES = json.load(open(os.path.join(GOLDEN, "vision_rope.json")))["cases"]


def positions_of(c):
    """The case's VisionPositions, built by posenc and checked against HF's position ids."""
    conv = c["convention"]
    if conv == "pixtral":
        pos = posenc.VisionPositions.raster([[1, h, w] for h, w in c["grids_hw"]])
        side = c["image_size"] // c["patch_size"]
        assert np.array_equal(pos.h * side + pos.w, c["position_ids"])  # HF: h * max_width + w
        return pos
    if conv == "llama4":
        pos = posenc.VisionPositions.llama4(c["image_size"] // c["patch_size"])
        assert pos.unrotated is not None and pos.unrotated[-1] and not pos.unrotated[:-1].any()
        return pos
    m = c["spatial_merge_size"]
    pos = posenc.VisionPositions.merged(c["grid_thw"], m)
    if conv == "minimax_m3_vl":
        assert np.array_equal(np.stack([pos.t, pos.h, pos.w], 1), c["position_ids_thw"])
    else:
        assert np.array_equal(np.stack([pos.h, pos.w], 1), c["position_ids_hw"])
    if "window_index" in c:
        order, offsets = posenc.vision_window_index(c["grid_thw"], m, c["window_size"], c["patch_size"])
        assert np.array_equal(order, c["window_index"]) and np.array_equal(offsets, c["cu_window_seqlens"])
        pos = pos.permute_merge_units(order, m)
    return pos


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_vision_rope_equals_hf(case):
    pos = positions_of(case)
    S, H, D = len(pos), case["heads"], case["head_dim"]
    x = np.array(case["x"], dtype=np.float64).reshape(-1)
    heads_first = case["convention"] == "pixtral"  # [1, heads, tokens, d]; others [tokens, heads, d]
    for angles, dtype, want, tol in (("exact", np.float64, "out_fp64full", 1e-13),
                                     ("reference_fp32", np.float32, "out_fp32", 2e-6)):
        enc = posenc.VisionRoPE(pos, head_dim=D, convention=case["convention"], theta=case["theta"], angles=angles)
        y = x.astype(dtype).reshape((1, H, S, D) if heads_first else (1, S, H, D))
        view = np.swapaxes(y, 1, 2) if heads_first else y  # [1, S, H, D] with the golden's strides
        enc.transform_q(view, np.arange(S))
        assert np.allclose(y.reshape(-1), np.array(case["expected"][want]).reshape(-1), rtol=0, atol=tol), angles


def rotate_numpy(x, pos, convention, theta):
    """§7.9's table: each pair's angle = coordinate x frequency; pairs half-split (interleaved: Llama 4)."""
    S, H, D = x.shape
    P = D // 2
    t, h, w = (np.asarray(a, dtype=np.float64) for a in (pos.t, pos.h, pos.w))
    if convention == "pixtral":
        f = theta ** (-2 * np.arange(P) / D)
        half = -(-P // 2)
        ang = np.concatenate([h[:, None] * f[0::2][None, :half], w[:, None] * f[1::2][None, :P - half]], 1)
    elif convention == "qwen_vl":
        f = theta ** (-2 * np.arange(D // 4) / (D / 2))
        ang = np.concatenate([h[:, None] * f, w[:, None] * f], 1)
    else:  # llama4
        f = theta ** (-2 * np.arange(D // 4) / (D / 2))
        ang = np.concatenate([(w[:, None] + 1) * f, (h[:, None] + 1) * f], 1)
        if pos.unrotated is not None:
            ang[pos.unrotated] = 0
    cos, sin = np.cos(ang)[:, None], np.sin(ang)[:, None]
    if convention == "llama4":
        a, b = x[..., 0::2], x[..., 1::2]
        return np.stack([a * cos - b * sin, a * sin + b * cos], -1).reshape(S, H, D)
    a, b = x[..., :P], x[..., P:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)


@pytest.mark.parametrize("convention,pos", [
    ("pixtral", posenc.VisionPositions.raster([[1, 3, 4], [1, 2, 2]])),
    ("qwen_vl", posenc.VisionPositions.merged([[2, 4, 2]], 2)),
    ("llama4", posenc.VisionPositions.llama4(3)),
])
def test_vision_rope_equals_the_table(convention, pos):
    rng = np.random.default_rng(4)
    D = 12 if convention == "pixtral" else 16
    x = rng.standard_normal((len(pos), 2, D))
    enc = posenc.VisionRoPE(pos, head_dim=D, convention=convention, theta=100.0)
    assert enc.convention == convention and enc.theta == 100.0 and enc.rotary_dim == D and enc.has_transform
    assert enc.position_offset == (1 if convention == "llama4" else 0)
    assert len(enc.positions) == len(pos) and len(enc.inv_freq) == D // 2 and len(enc.pair_axes) == D // 2
    got = enc.transform_k(x.copy()[None], np.arange(len(pos)))[0]
    assert np.allclose(got, rotate_numpy(x, pos, convention, 100.0), rtol=0, atol=1e-13)
    back = enc.transform_k_backward(got[None].copy(), np.arange(len(pos)))[0]
    assert np.allclose(back, x, rtol=0, atol=1e-13)


def test_positions_windows_and_segments():
    g = [[2, 2, 3], [1, 1, 2]]
    assert np.array_equal(posenc.vision_frame_offsets(g), [0, 6, 12, 14])
    assert np.array_equal(posenc.vision_segments([0, 2, 5]), [0, 0, 1, 1, 1])
    r = posenc.VisionPositions.raster(np.array(g))
    t, h, w = np.meshgrid(np.arange(2), np.arange(2), np.arange(3), indexing="ij")
    assert np.array_equal(r.t[:12], t.ravel()) and np.array_equal(r.h[:12], h.ravel())
    assert np.array_equal(r.w[:12], w.ravel()) and r.unrotated is None and len(r) == 14
    m = posenc.VisionPositions.merged([[1, 4, 4]], 2)
    assert list(zip(m.h[:8], m.w[:8])) == [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3)]
    p = posenc.VisionPositions([0, 0], [1, 2], [3, 4], unrotated=[0, 1])
    assert np.array_equal(p.w, [3, 4]) and p.unrotated.tolist() == [False, True]


def test_vision_rope_in_attention_equals_rotating_first():
    g = [[2, 4, 6]]
    order, offsets = posenc.vision_window_index(g, 2, 56, 14)
    pos = posenc.VisionPositions.merged(g, 2).permute_merge_units(order, 2)
    seg = posenc.vision_segments(offsets)
    S, H, D = len(pos), 2, 8
    enc = posenc.VisionRoPE(pos, head_dim=D)
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((1, S, H, D)).astype(np.float32).astype(np.float64) for _ in range(3))
    got = posenc.sdpa(q, k, v, enc, query_segments=seg, key_segments=seg)
    qr, kr = enc.transform_q(q.copy(), np.arange(S)), enc.transform_k(k.copy(), np.arange(S))
    want = posenc.sdpa(qr, kr, v, query_segments=seg, key_segments=seg)
    assert np.allclose(got, want, rtol=0, atol=1e-14)
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    fused = posenc.attention(*f32, enc, query_segments=seg, key_segments=seg, bf16_dot_products=False)
    assert np.abs(fused - want).max() < 1e-5


def test_vision_errors():
    pos = posenc.VisionPositions.merged([[1, 2, 2]], 2)
    with pytest.raises(ValueError, match="vision_rope.convention"):
        posenc.VisionRoPE(pos, head_dim=8, convention="siglip")
    with pytest.raises(posenc.ConfigError, match="vision_rope.head_dim"):
        posenc.VisionRoPE(pos, head_dim=6)
    with pytest.raises(posenc.ConfigError, match="vision_rope.theta"):
        posenc.VisionRoPE(pos, head_dim=8, theta=1.0)
    with pytest.raises(TypeError):
        posenc.VisionRoPE([0, 1], head_dim=8)
    with pytest.raises(posenc.ConfigError, match="vision.grid_thw"):
        posenc.VisionPositions.merged([[1, 3, 2]], 2)
    with pytest.raises(ValueError, match="grid_thw: expected \\(t, h, w\\) triples"):
        posenc.VisionPositions.raster([1, 2])
    with pytest.raises(posenc.ConfigError, match="vision.spatial_merge_size"):
        posenc.VisionPositions.merged([[1, 2, 2]], 0)
    with pytest.raises(posenc.ConfigError, match="vision_positions"):
        posenc.VisionPositions([0, 0], [0], [0, 0])
    with pytest.raises(posenc.ConfigError, match="vision.unit_order"):
        pos.permute_merge_units([3], 2)
    with pytest.raises(posenc.ConfigError, match="vision.offsets"):
        posenc.vision_segments([1, 2])
    enc = posenc.VisionRoPE(pos, head_dim=8)
    x = np.zeros((1, 5, 1, 8), dtype=np.float32)  # 5 tokens, a table of 4
    with pytest.raises(posenc.ConfigError, match="vision_rope.position"):
        enc.transform_q(x, np.arange(5))
    with pytest.raises(posenc.ConfigError, match="vision_rope.position"):
        posenc.sdpa(x.astype(np.float64), x.astype(np.float64), x.astype(np.float64), enc)
    with pytest.raises(posenc.ConfigError, match="vision_rope.position"):
        posenc.attention(x, x, x, enc)
