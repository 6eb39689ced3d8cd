"""Plain-PyTorch implementations of the encodings and of attention, written from the papers and the
Hugging Face code (cited per function), in float64. The tests compare posenc against these; none of
them calls posenc."""

from __future__ import annotations

import math

import torch

# ---- RoPE (Su et al. 2021; transformers modeling_llama.py rotate_half / apply_rotary_pos_emb) -------


def rope_inv_freq(head_dim: int, theta: float) -> torch.Tensor:
    """transformers _compute_default_rope_parameters: 1 / base ** (arange(0, dim, 2) / dim)."""
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))


def llama3_inv_freq(head_dim, theta, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, old_len=8192):
    """transformers modeling_rope_utils._compute_llama3_parameters."""
    inv_freq = rope_inv_freq(head_dim, theta)
    low_freq_wavelen = old_len / low_freq_factor
    high_freq_wavelen = old_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * inv_freq_llama / factor + smooth * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, inv_freq_llama)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_half_split(x, positions, inv_freq):
    """x [B, S, H, D], positions [B, S]: HF apply_rotary_pos_emb (cos = cat(freqs, freqs).cos())."""
    freqs = positions.to(torch.float64)[..., None] * inv_freq  # [B, S, D/2]
    emb = torch.cat((freqs, freqs), dim=-1)[:, :, None, :]
    return x * emb.cos() + rotate_half(x) * emb.sin()


def rope_interleaved(x, positions, inv_freq, scale_pow=None):
    """GPT-J / llama.cpp pairs (2i, 2i + 1); scale_pow [B, S, D/2] multiplies each pair (xPos)."""
    freqs = positions.to(torch.float64)[..., None] * inv_freq
    cos, sin = freqs.cos()[:, :, None, :], freqs.sin()[:, :, None, :]
    if scale_pow is not None:
        cos, sin = cos * scale_pow[:, :, None, :], sin * scale_pow[:, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    y0, y1 = x0 * cos - x1 * sin, x0 * sin + x1 * cos
    return torch.stack((y0, y1), dim=-1).flatten(-2)


# ---- xPos (Sun et al. 2022, eq. for q_n, k_m; torchscale XPOS) -------------------------------------


def xpos(x, positions, query: bool, theta=10000.0, gamma=0.4, scale_base=512.0, center=0):
    """Pair k rotated by n theta^(-2k/D) and scaled by zeta_k^(+-(n - c) / scale_base), zeta_k =
    (2k / D + gamma) / (1 + gamma); queries +, keys -; interleaved pairs (rotate_every_two)."""
    D = x.shape[-1]
    k = torch.arange(0, D // 2, dtype=torch.float64)
    zeta = (2 * k / D + gamma) / (1 + gamma)
    u = (positions.to(torch.float64) - center) / scale_base
    scale = zeta ** ((1 if query else -1) * u[..., None])
    return rope_interleaved(x, positions, rope_inv_freq(D, theta), scale)


# ---- ALiBi (Press et al. 2022; transformers modeling_bloom.py build_alibi_tensor) -------------------


def alibi_slopes(n: int) -> torch.Tensor:
    closest = 2 ** math.floor(math.log2(n))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = base ** torch.arange(1, 1 + closest, dtype=torch.float64)
    if closest != n:
        extra_base = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        remaining = min(closest, n - closest)
        slopes = torch.cat([slopes, extra_base ** torch.arange(1, 1 + 2 * remaining, 2, dtype=torch.float64)])
    return slopes


def alibi_bias(n_heads, qpos, kpos):
    """Symmetric form -m_h |i - j| [H, Sq, Sk] (the paper's; MPT's with causal masking)."""
    d = (kpos[None, :] - qpos[:, None]).abs().to(torch.float64)
    return -alibi_slopes(n_heads)[:, None, None] * d


# ---- T5 (Raffel et al. 2020; transformers modeling_t5.py T5Attention._relative_position_bucket) -----


def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def t5_bias(table, qpos, kpos, bidirectional=True, max_distance=128):
    """table [num_buckets, H] -> [H, Sq, Sk] (T5Attention.compute_bias)."""
    rel = kpos[None, :] - qpos[:, None]
    b = t5_bucket(rel, bidirectional, table.shape[0], max_distance)
    return table[b].permute(2, 0, 1)


# ---- Shaw et al. 2018, eq. 3-4 (tensor2tensor _relative_attention_inner) -----------------------------


def shaw_index(qpos, kpos, k_max):
    return (kpos[None, :] - qpos[:, None]).clamp(-k_max, k_max) + k_max


# ---- attention ---------------------------------------------------------------------------------------


def attention(q, k, v, *, bias=None, causal=False, scale=None, softcap=None, sinks=None, window=None,
              shaw=None, qpos=None, kpos=None, return_lse=False):
    """softmax(cap(scale (q k^T + q a^K)) + bias + mask) (v + a^V), q [B, Sq, H, D], k, v
    [B, Sk, Hkv, D] (GQA by repetition), bias [H, Sq, Sk], sinks [H] (a logit in the denominator
    only, gpt-oss), shaw = (index [Sq, Sk], key_table [R, D], value_table [R, D] or None)."""
    B, Sq, H, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    k = k.repeat_interleave(H // Hkv, dim=2)
    v = v.repeat_interleave(H // Hkv, dim=2)
    scale = D ** -0.5 if scale is None else scale
    qpos = torch.arange(Sk - Sq, Sk) if qpos is None else qpos
    kpos = torch.arange(Sk) if kpos is None else kpos
    s = torch.einsum("bihd,bjhd->bhij", q, k)
    if shaw is not None:
        idx, ak, av = shaw
        s = s + torch.einsum("bihd,ijd->bhij", q, ak[idx])
    s = s * scale
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    if bias is not None:
        s = s + bias[None]
    allowed = torch.ones(Sq, Sk, dtype=torch.bool)
    if causal:
        allowed &= kpos[None, :] <= qpos[:, None]
    if window is not None:
        d = qpos[:, None] - kpos[None, :]
        allowed &= (d < window) if causal else (d.abs() < window)
    s = s.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        s = torch.cat([s, sinks[None, :, None, None].expand(B, H, Sq, 1).to(s.dtype)], dim=-1)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1)
    if sinks is not None:
        p = p[..., :-1]
    out = torch.einsum("bhij,bjhd->bihd", p, v)
    if shaw is not None and shaw[2] is not None:
        idx, _, av = shaw
        out = out + torch.einsum("bhij,ijd->bihd", p, av[idx])
    return (out, lse) if return_lse else out
