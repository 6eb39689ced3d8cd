"""The array-level API: posenc's attention family on numpy arrays and torch CPU tensors.

Inputs are read where they are (numpy through the buffer protocol, torch through DLPack), with
their strides; outputs are allocated here, of the inputs' kind (numpy in, numpy out; torch in,
torch out), or written into ``out=``. The C++ call runs with the GIL released, on posenc's thread
pool (``posenc.set_num_threads``).
"""

from __future__ import annotations

import sys

import numpy as np

from . import _posenc

_LAYOUTS = ("bshd", "bhsd")


def _torch():
    return sys.modules.get("torch")


def _is_torch(x) -> bool:
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


def _empty(like, shape, dtype: str):
    """An uninitialised array of `like`'s kind (torch or numpy)."""
    if _is_torch(like):
        t = _torch()
        return t.empty(shape, dtype=getattr(t, dtype))
    return np.empty(shape, dtype=dtype)


def _zeros(like, shape, dtype: str):
    if _is_torch(like):
        t = _torch()
        return t.zeros(shape, dtype=getattr(t, dtype))
    return np.zeros(shape, dtype=dtype)


def _swap(x):
    """[B, H, S, D] <-> [B, S, H, D] as a view (no copy)."""
    if x is None:
        return None
    if _is_torch(x):
        return x.transpose(1, 2)
    return np.swapaxes(x, 1, 2)


def _check_layout(layout: str) -> bool:
    if layout not in _LAYOUTS:
        raise ValueError(f"layout = {layout!r} is invalid (expected 'bshd' or 'bhsd')")
    return layout == "bhsd"


def _shape(x, name: str):
    try:
        return tuple(int(s) for s in x.shape)
    except AttributeError:
        raise TypeError(f"{name}: expected a numpy array or a torch tensor, got {type(x).__name__}") from None


def _rank4(x, name: str):
    s = _shape(x, name)
    if len(s) != 4:
        raise ValueError(f"{name}: expected 4 dimensions [batch, tokens, heads, dim], got shape {s}")
    return s


def _dtype_name(x) -> str:
    return str(x.dtype).replace("torch.", "")


def _options(kw: dict) -> dict:
    return {k: v for k, v in kw.items() if v is not None}


def attention(q, k, v, encoder=None, *, causal=False, window=None, chunk=None, softcap=None, sinks=None,
              scale=None, query_positions=None, key_positions=None, key_lengths=None, key_mask=None,
              query_segments=None, key_segments=None, transform_queries=True, transform_keys=True,
              cu_seqlens_q=None, cu_seqlens_k=None, return_lse=False, out=None, layout="bshd",
              bf16_dot_products=True, q8_0_int8_dot_products=True):
    """posenc's fused attention (``posenc::attention``): fp32 q and out; k, v float32, bfloat16,
    float16 or q8_0 blocks (``quantize_q8_0``).

    q [B, Sq, Hq, D], k [B, Sk, Hkv, D], v [B, Sk, Hkv, Dv] (``layout='bhsd'``: [B, H, S, D] views),
    any strides. Returns out [B, Sq, Hq, Dv] (the layout of q), and with ``return_lse`` also the
    natural log of each row's softmax denominator [B, Hq, Sq] (what ``attention_backward`` takes).
    Options as ``posenc::attention_options``: ``window`` = sliding window, ``chunk`` = attention
    chunk, ``softcap`` = logit soft-cap, ``sinks`` = one logit per query head. A ragged batch passes
    ``cu_seqlens_q`` / ``cu_seqlens_k`` with B = 1. ``bf16_dot_products`` / ``q8_0_int8_dot_products``
    (on by default where the CPU has the instructions) trade the decode path's bound for speed as
    ``posenc::fast_attention_options`` documents; False gives the exact kernels.
    """
    swap = _check_layout(layout)
    qv, kv, vv = (_swap(q), _swap(k), _swap(v)) if swap else (q, k, v)
    B, Sq, Hq, _ = _rank4(qv, "q")
    is_q8 = _dtype_name(kv) == "uint8"
    Dv = _shape(vv, "v")[3] * 32 if is_q8 else _rank4(vv, "v")[3]
    if out is None:
        out = _empty(q, (B, Hq, Sq, Dv) if swap else (B, Sq, Hq, Dv), "float32")
    lse = _empty(q, (B, Hq, Sq), "float32") if return_lse else None
    _posenc._attention(qv, kv, vv, _swap(out) if swap else out, encoder,
                       None if lse is None else lse.reshape(-1),
                       **_options(dict(causal=causal, window=window, chunk=chunk, softcap=softcap, sinks=sinks,
                                       scale=scale, query_positions=query_positions, key_positions=key_positions,
                                       key_lengths=key_lengths, key_mask=key_mask, query_segments=query_segments,
                                       key_segments=key_segments, transform_queries=transform_queries,
                                       transform_keys=transform_keys, cu_seqlens_q=cu_seqlens_q,
                                       cu_seqlens_k=cu_seqlens_k, bf16_dot_products=bf16_dot_products,
                                       q8_0_int8_dot_products=q8_0_int8_dot_products)))
    return (out, lse) if return_lse else out


def attention_backward(q, k, v, out, lse, dout, encoder=None, *, encoder_grad=None, sinks_grad=None,
                       causal=False, window=None, chunk=None, softcap=None, sinks=None, scale=None,
                       query_positions=None, key_positions=None, key_lengths=None, key_mask=None,
                       query_segments=None, key_segments=None, transform_queries=True, transform_keys=True,
                       layout="bshd"):
    """The fused backward (``posenc::attention_backward``, fp32): returns (dq, dk, dv) in the shapes
    of q, k, v. ``encoder_grad`` (float64 [encoder.parameter_count]) and ``sinks_grad`` (float64
    [Hq]) are ACCUMULATED (+=) when given. Same options as the forward."""
    swap = _check_layout(layout)
    dq = _empty(q, _shape(q, "q"), "float32")
    dk = _empty(k, _shape(k, "k"), "float32")
    dv = _empty(v, _shape(v, "v"), "float32")
    args = (q, k, v, out, dout, dq, dk, dv)
    if swap:
        args = tuple(_swap(a) for a in args)
    q_, k_, v_, out_, dout_, dq_, dk_, dv_ = args
    _posenc._attention_backward(q_, k_, v_, out_, lse.reshape(-1), dout_, dq_, dk_, dv_, encoder, encoder_grad,
                                sinks_grad,
                                **_options(dict(causal=causal, window=window, chunk=chunk, softcap=softcap,
                                                sinks=sinks, scale=scale, query_positions=query_positions,
                                                key_positions=key_positions, key_lengths=key_lengths,
                                                key_mask=key_mask, query_segments=query_segments,
                                                key_segments=key_segments, transform_queries=transform_queries,
                                                transform_keys=transform_keys)))
    return dq, dk, dv


def sdpa(q, k, v, encoder=None, *, causal=False, window=None, chunk=None, softcap=None, sinks=None, scale=None,
         query_positions=None, key_positions=None, key_lengths=None, key_mask=None, query_segments=None,
         key_segments=None, transform_queries=True, transform_keys=True, out=None, layout="bshd"):
    """The reference attention (``posenc::sdpa``, accumulating in double): float32 or float64 q, k,
    v of one dtype; returns out of that dtype. Same options as ``attention``."""
    swap = _check_layout(layout)
    qv, kv, vv = (_swap(q), _swap(k), _swap(v)) if swap else (q, k, v)
    B, Sq, Hq, _ = _rank4(qv, "q")
    Dv = _rank4(vv, "v")[3]
    if out is None:
        out = _empty(q, (B, Hq, Sq, Dv) if swap else (B, Sq, Hq, Dv), _dtype_name(q))
    _posenc._sdpa(qv, kv, vv, _swap(out) if swap else out, encoder,
                  **_options(dict(causal=causal, window=window, chunk=chunk, softcap=softcap, sinks=sinks,
                                  scale=scale, query_positions=query_positions, key_positions=key_positions,
                                  key_lengths=key_lengths, key_mask=key_mask, query_segments=query_segments,
                                  key_segments=key_segments, transform_queries=transform_queries,
                                  transform_keys=transform_keys)))
    return out


def sdpa_backward(q, k, v, dout, encoder=None, *, encoder_grad=None, sinks_grad=None, causal=False, window=None,
                  chunk=None, softcap=None, sinks=None, scale=None, query_positions=None, key_positions=None,
                  key_lengths=None, key_mask=None, query_segments=None, key_segments=None,
                  transform_queries=True, transform_keys=True, layout="bshd"):
    """The reference backward (``posenc::sdpa_backward``, in double): returns (dq, dk, dv) of q's
    dtype; ``encoder_grad`` / ``sinks_grad`` (float64) are accumulated when given."""
    swap = _check_layout(layout)
    dt = _dtype_name(q)
    dq, dk, dv = (_empty(x, _shape(x, n), dt) for x, n in ((q, "q"), (k, "k"), (v, "v")))
    args = (q, k, v, dout, dq, dk, dv)
    if swap:
        args = tuple(_swap(a) for a in args)
    _posenc._sdpa_backward(*args, encoder, encoder_grad, sinks_grad,
                           **_options(dict(causal=causal, window=window, chunk=chunk, softcap=softcap, sinks=sinks,
                                           scale=scale, query_positions=query_positions,
                                           key_positions=key_positions, key_lengths=key_lengths, key_mask=key_mask,
                                           query_segments=query_segments, key_segments=key_segments,
                                           transform_queries=transform_queries, transform_keys=transform_keys)))
    return dq, dk, dv


def paged_attention(q, k_blocks, v_blocks, block_table, lengths, encoder=None, *, causal=False, window=None,
                    chunk=None, softcap=None, sinks=None, scale=None, out=None):
    """``posenc::attention`` over a paged K/V cache (vLLM's layout): pools [num_blocks, block_size,
    Hkv, D] (float32, bfloat16, float16 or q8_0 blocks), ``block_table`` int [B, blocks_per_sequence],
    ``lengths`` [B]; q [B, Sq, Hq, D] holds each sequence's last Sq tokens. The cache holds keys
    already transformed (the queries get the encoder's transform)."""
    B, Sq, Hq, _ = _rank4(q, "q")
    is_q8 = _dtype_name(v_blocks) == "uint8"
    Dv = _shape(v_blocks, "v_blocks")[3] * 32 if is_q8 else _rank4(v_blocks, "v_blocks")[3]
    if out is None:
        out = _empty(q, (B, Sq, Hq, Dv), "float32")
    _posenc._attention_paged(q, k_blocks, v_blocks, block_table, lengths, out, encoder, transform_keys=False,
                             **_options(dict(causal=causal, window=window, chunk=chunk, softcap=softcap,
                                             sinks=sinks, scale=scale)))
    return out


def quantize_q8_0(x):
    """float32 [..., D] (D a multiple of 32, contiguous) as ggml q8_0 blocks: uint8 [..., D / 32, 34]
    (a float16 scale and 32 int8 quants each), what ``attention`` and the caches read as K/V."""
    s = _shape(x, "x")
    if not s or s[-1] % 32:
        raise ValueError(f"x: the last axis must be a multiple of 32, got shape {s}")
    out = _empty(x, s[:-1] + (s[-1] // 32, 34), "uint8")
    _posenc._quantize_q8_0(x, out)
    return out


def dequantize_q8_0(blocks):
    """q8_0 blocks uint8 [..., n, 34] (contiguous) back to float32 [..., 32 n]."""
    s = _shape(blocks, "blocks")
    if len(s) < 2 or s[-1] != 34 or _dtype_name(blocks) != "uint8":
        raise TypeError(f"blocks: expected uint8 [..., n, 34] q8_0 blocks, got {_dtype_name(blocks)} {s}")
    out = _empty(blocks, s[:-2] + (s[-2] * 32,), "float32")
    _posenc._dequantize_q8_0(blocks, out)
    return out


class KVCache(_posenc._KVCache):
    """One layer's KV cache (``posenc::kv_cache<float>``): keys stored after the encoder's key
    transform with their positions; ``append``, ``attend``, ``shift_window``; length-dependent RoPE
    schedules steered by ``policy`` ('rerotate_cached_keys', 'drop_cache', 'keep_stale'); keys and/or
    values stored as 'q8_0' blocks."""

    def attend(self, encoder, q, q_positions, *, causal=True, window=None, chunk=None, softcap=None, sinks=None,
               scale=None, out=None):
        """Attention of q [B, Sq, Hq, D] at q_positions [B * Sq] over every cached token."""
        B, Sq, Hq, _ = _rank4(q, "q")
        if out is None:
            out = _empty(q, (B, Sq, Hq, self.value_dim), "float32")
        self._attend(encoder, q, out, q_positions, **_options(dict(causal=causal, window=window, chunk=chunk,
                                                                   softcap=softcap, sinks=sinks, scale=scale)))
        return out


class PagedKVCache(_posenc._PagedKVCache):
    """One layer's paged KV cache (``posenc::paged_kv_cache``, vLLM's block layout): sequences grow by
    taking free blocks of a pool allocated once; token i of a sequence sits at position i."""

    def __init__(self, *, kv_heads, head_dim, value_dim=None, block_size=16, num_blocks, key_type="float32",
                 value_type="float32"):
        super().__init__(kv_heads=kv_heads, head_dim=head_dim, value_dim=value_dim, block_size=block_size,
                         num_blocks=num_blocks, key_type=key_type, value_type=value_type)
        self.value_dim = value_dim or head_dim

    def attend(self, encoder, sequences, q, *, causal=True, window=None, chunk=None, softcap=None, sinks=None,
               scale=None, out=None):
        """q [len(sequences), Sq, Hq, D] holds each sequence's last Sq tokens; returns out [.., Dv]."""
        B, Sq, Hq, _ = _rank4(q, "q")
        if out is None:
            out = _empty(q, (B, Sq, Hq, self.value_dim), "float32")
        self._attend(encoder, list(sequences), q, out, **_options(dict(causal=causal, window=window, chunk=chunk,
                                                                       softcap=softcap, sinks=sinks, scale=scale)))
        return out
