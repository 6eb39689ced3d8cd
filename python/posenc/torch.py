"""posenc in PyTorch: a differentiable fused attention op and trainable encoder modules.

``attention(q, k, v, encoder, causal=..., window=..., softcap=..., sinks=...)`` is a
``torch.autograd.Function``. float32 inputs run posenc's fused attention forward (which keeps each
row's log-sum-exp, returned with ``return_lse=True``) and the fused ``attention_backward``; float64
inputs run the double-precision reference pair ``sdpa`` / ``sdpa_backward`` (what
``torch.autograd.gradcheck`` checks), as do float32 inputs with an encoder the fused kernels do
not compute (``encoder.fused`` False). No copy of q, k, v, out or the gradients is made on the way to
C++ and no [Sq, Sk] buffer exists; positions, masks and sinks are copied (O(batch x tokens)).

Trainable encoders are ``nn.Module``\\ s whose tables are ``nn.Parameter``\\ s: ``T5Bias``,
``ShawRelative``, ``DeBERTa``, ``FIRE``, ``KERPLE``, ``CoPE``, ``LearnedAbsolute`` (the additive
hook, on embeddings); attention sinks are a
tensor (a parameter) passed as ``sinks=``. Fixed encoders (RoPE, ALiBi, xPos, ...) are passed as
posenc encoders; ``combine(posenc.RoPE(...), T5Bias(...))`` joins the two kinds.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import torch
from torch import nn

from . import _posenc

__all__ = ["attention", "Encoding", "T5Bias", "ShawRelative", "DeBERTa", "FIRE", "KERPLE", "CoPE", "LearnedAbsolute",
           "Sinusoidal", "Fixed", "combine"]


class Encoding(nn.Module):
    """Base of the encoder modules: ``build()`` gives the posenc encoder for the current parameter
    values and the parameters in the encoder's gradient layout."""

    def build(self) -> Tuple[_posenc.Encoder, List[torch.Tensor]]:  # pragma: no cover - abstract
        raise NotImplementedError


class Fixed(Encoding):
    """A posenc encoder without parameters (RoPE, ALiBi, xPos, ...), as a module."""

    def __init__(self, encoder: _posenc.Encoder):
        super().__init__()
        if not isinstance(encoder, _posenc.Encoder):
            raise TypeError(f"encoder: expected a posenc encoder, got {type(encoder).__name__}")
        if encoder.parameter_count:
            raise TypeError(f"encoder: '{encoder.name}' has parameters: use its module (T5Bias, ShawRelative)")
        self.encoder = encoder

    def build(self):
        return self.encoder, []

    def extra_repr(self) -> str:
        return self.encoder.name


class T5Bias(Encoding):
    """The T5 relative-bucket bias with its table [num_buckets, num_heads] as a parameter (HF
    ``relative_attention_bias.weight``)."""

    def __init__(self, num_heads: int, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True,
                 dtype=torch.float32):
        super().__init__()
        self.max_distance, self.bidirectional = int(max_distance), bool(bidirectional)
        self.weight = nn.Parameter(torch.zeros(num_buckets, num_heads, dtype=dtype))
        nn.init.normal_(self.weight, std=0.1)
        self.build()  # validates the configuration now

    def build(self):
        enc = _posenc.T5Bias(self.weight.detach(), bidirectional=self.bidirectional, max_distance=self.max_distance)
        return enc, [self.weight]


class ShawRelative(Encoding):
    """Shaw et al. relative keys and values with their tables as parameters: [2 k + 1, head_dim]
    shared by the heads, or [num_heads, 2 k + 1, head_dim] with ``num_heads``; distances clipped to
    [-k, k] (``max_relative_position`` = k, tensor2tensor)."""

    def __init__(self, head_dim: int, max_relative_position: int = 20, value_term: bool = True,
                 num_heads: Optional[int] = None, dtype=torch.float32):
        super().__init__()
        rows = 2 * int(max_relative_position) + 1
        shape = (rows, head_dim) if num_heads is None else (num_heads, rows, head_dim)
        self.key_table = nn.Parameter(torch.randn(*shape, dtype=dtype) * head_dim ** -0.5)
        self.value_table = nn.Parameter(torch.randn(*shape, dtype=dtype) * head_dim ** -0.5) if value_term else None
        self.build()

    def build(self):
        vt = None if self.value_table is None else self.value_table.detach()
        enc = _posenc.Shaw(self.key_table.detach(), vt)
        return enc, [self.key_table] + ([] if self.value_table is None else [self.value_table])


class DeBERTa(Encoding):
    """DeBERTa's disentangled attention with its projected relative tables as parameters:
    ``key_table`` (c2p, K_r) and ``query_table`` (p2c, Q_r), [2 span, num_heads, head_dim] with span
    = ``position_buckets`` (log buckets) or ``max_relative_positions`` (v1 clamp when buckets = 0).
    The score is divided by sqrt(head_dim (1 + terms)) (HF ``scale_factor``)."""

    def __init__(self, num_heads: int, head_dim: int, position_buckets: int = 256, max_relative_positions: int = 512,
                 c2p: bool = True, p2c: bool = True, bucket_rule: str = "hugging_face", dtype=torch.float32):
        super().__init__()
        if not (c2p or p2c):
            raise ValueError("c2p, p2c: DeBERTa needs at least one relative term")
        span = int(position_buckets) if position_buckets > 0 else int(max_relative_positions)
        shape = (2 * span, num_heads, head_dim)
        self.position_buckets, self.max_relative_positions = int(position_buckets), int(max_relative_positions)
        self.bucket_rule = bucket_rule
        self.key_table = nn.Parameter(torch.randn(*shape, dtype=dtype) * head_dim ** -0.5) if c2p else None
        self.query_table = nn.Parameter(torch.randn(*shape, dtype=dtype) * head_dim ** -0.5) if p2c else None
        self.build()

    def build(self):
        kt = None if self.key_table is None else self.key_table.detach()
        qt = None if self.query_table is None else self.query_table.detach()
        enc = _posenc.DeBERTa(kt, qt, position_buckets=self.position_buckets,
                              max_relative_positions=self.max_relative_positions, bucket_rule=self.bucket_rule)
        return enc, [t for t in (self.key_table, self.query_table) if t is not None]


class FIRE(Encoding):
    """FIRE (Li et al. 2023) with its parameters: ``c``, ``threshold`` (L; |c| and |L| are used),
    the MLP's ``w1``, ``b1`` [mlp_width], ``w2`` [num_heads, mlp_width], ``b2`` [num_heads].
    Initial values as ``posenc lab``: c = 0.1, random hidden layer, zero output layer."""

    def __init__(self, num_heads: int, mlp_width: int = 32, c: float = 0.1, threshold: float = 512.0,
                 eps: float = 1e-6, dtype=torch.float32):
        super().__init__()
        self.eps = float(eps)
        self.c = nn.Parameter(torch.tensor(float(c), dtype=dtype))
        self.threshold = nn.Parameter(torch.tensor(float(threshold), dtype=dtype))
        self.w1 = nn.Parameter(torch.randn(mlp_width, dtype=dtype))
        self.b1 = nn.Parameter(0.1 * torch.randn(mlp_width, dtype=dtype))
        self.w2 = nn.Parameter(torch.zeros(num_heads, mlp_width, dtype=dtype))
        self.b2 = nn.Parameter(torch.zeros(num_heads, dtype=dtype))
        self.build()

    def build(self):
        ps = [self.c, self.threshold, self.w1, self.b1, self.w2, self.b2]
        flat = torch.cat([p.detach().reshape(-1).double() for p in ps])
        enc = _posenc.FIRE(flat, num_heads=self.b2.shape[0], mlp_width=self.w1.shape[0], eps=self.eps)
        return enc, ps


class KERPLE(Encoding):
    """KERPLE (Chi et al. 2022) with ``r1``, ``r2`` [num_heads] as parameters; ``kernel`` 'logarithmic'
    (-r1 ln(1 + r2 n)) or 'power' (-r1 n^r2). As the authors, every forward first clamps the
    parameters in place into their feasible set (>= ``min_parameter``; the power's r2 <= 2).
    Initial values theirs: r1 uniform in [0, 2), r2 uniform in [0, 1)."""

    def __init__(self, num_heads: int, kernel: str = "logarithmic", min_parameter: float = 0.01, dtype=torch.float32):
        super().__init__()
        self.kernel, self.min_parameter = kernel, float(min_parameter)
        self.r1 = nn.Parameter(2 * torch.rand(num_heads, dtype=dtype))
        self.r2 = nn.Parameter(torch.rand(num_heads, dtype=dtype))
        self.build()

    def build(self):
        # on .data, as the authors: no autograd version bump (a forward may build this module twice)
        self.r1.data.clamp_(min=self.min_parameter)
        self.r2.data.clamp_(min=self.min_parameter)
        if self.kernel == "power":
            self.r2.data.clamp_(max=2.0)
        enc = _posenc.KERPLE(self.r1.detach(), self.r2.detach(), kernel=self.kernel, min_parameter=self.min_parameter)
        return enc, [self.r1, self.r2]


class CoPE(Encoding):
    """CoPE (Golovneva et al. 2024) with its position embeddings ``table`` [npos, head_dim] (the
    transpose of the authors' ``pos_emb``, zeros at first as theirs) as a parameter. float32 calls
    run the fused kernels where they compute it (``encoder.fused``), else posenc's sdpa pair."""

    def __init__(self, head_dim: int, npos: int = 513, gate_source: str = "keys", scale_position_term: bool = True,
                 dtype=torch.float32):
        super().__init__()
        self.gate_source, self.scale_position_term = gate_source, bool(scale_position_term)
        self.table = nn.Parameter(torch.zeros(npos, head_dim, dtype=dtype))
        self.build()

    def build(self):
        enc = _posenc.CoPE(self.table.detach(), gate_source=self.gate_source,
                           scale_position_term=self.scale_position_term)
        return enc, [self.table]


class _Combined(Encoding):
    def __init__(self, parts: Sequence):
        super().__init__()
        self.parts = nn.ModuleList([p if isinstance(p, Encoding) else Fixed(p) for p in parts])

    def build(self):
        encs, params = [], []
        for p in self.parts:
            e, ps = p.build()
            encs.append(e)
            params += ps
        return _posenc.combine(*encs), params


def combine(*parts) -> Encoding:
    """Joins posenc encoders and encoder modules (q/k transforms in order, at most one bias)."""
    return _Combined(parts)


def _resolve(encoder):
    if encoder is None:
        return None, []
    if isinstance(encoder, Encoding):
        return encoder.build()
    if isinstance(encoder, _posenc.Encoder):
        if encoder.parameter_count:
            # a posenc.T5Bias / Shaw value: its table is a constant here
            return encoder, []
        return encoder, []
    raise TypeError("encoder: expected a posenc encoder, a posenc.torch encoder module or None, got "
                    f"{type(encoder).__name__}")


def _fused(q, enc) -> bool:
    """float32 with an encoder the fused kernels compute; else the sdpa pair (float64, or encoder.fused False)."""
    return q.dtype == torch.float32 and (enc is None or enc.fused)


def _bshd(x, swap: bool):
    return x.transpose(1, 2) if swap else x


def _check(name: str, x, dtype=None):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch tensor, got {type(x).__name__}")
    if x.device.type != "cpu":
        raise ValueError(f"{name}: a tensor on device '{x.device.type}' (posenc computes on the CPU: .cpu() it)")
    if x.layout != torch.strided:
        raise ValueError(f"{name}: a {x.layout} tensor (posenc reads strided tensors only)")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"{name}: expected {str(dtype).replace('torch.', '')} (the dtype of q), got "
                        f"{str(x.dtype).replace('torch.', '')}")


class _AttentionFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, sinks, enc, opts, swap, nparams, *params):
        qv, kv, vv = _bshd(q, swap), _bshd(k, swap), _bshd(v, swap)
        B, Sq, Hq, _ = qv.shape
        Dv = vv.shape[3]
        out = torch.empty(B, Sq, Hq, Dv, dtype=q.dtype)
        kw = dict(opts)
        if sinks is not None:
            kw["sinks"] = sinks.detach()
        fused = _fused(q, enc)
        if fused:
            lse = torch.empty(B, Hq, Sq, dtype=torch.float32)
            _posenc._attention(qv.detach(), kv.detach(), vv.detach(), out, enc, lse.view(-1), **kw)
        else:
            lse = torch.empty(0, dtype=q.dtype)
            _posenc._sdpa(qv.detach(), kv.detach(), vv.detach(), out, enc, **kw)
        ctx.save_for_backward(q, k, v, out, lse, sinks, *params)
        ctx.enc, ctx.kw, ctx.swap, ctx.nparams, ctx.fused = enc, kw, swap, nparams, fused
        ctx.mark_non_differentiable(lse)
        return _bshd(out, swap), lse

    @staticmethod
    def backward(ctx, dout, _dlse):
        q, k, v, out, lse, sinks, *params = ctx.saved_tensors
        swap, kw, enc = ctx.swap, ctx.kw, ctx.enc
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        n = enc.parameter_count if (enc is not None and params) else 0
        egrad = torch.zeros(n, dtype=torch.float64) if n else None
        sgrad = torch.zeros(sinks.shape[0], dtype=torch.float64) if sinks is not None else None
        d_out = _bshd(dout, swap)
        if d_out.dtype != q.dtype:
            d_out = d_out.to(q.dtype)
        qv, kv, vv = _bshd(q, swap).detach(), _bshd(k, swap).detach(), _bshd(v, swap).detach()
        if ctx.fused:
            _posenc._attention_backward(qv, kv, vv, out, lse.view(-1), d_out, _bshd(dq, swap), _bshd(dk, swap),
                                        _bshd(dv, swap), enc, egrad, sgrad, **kw)
        else:
            _posenc._sdpa_backward(qv, kv, vv, d_out, _bshd(dq, swap), _bshd(dk, swap), _bshd(dv, swap), enc, egrad,
                                   sgrad, **kw)
        pgrads = []
        offset = 0
        for p in params:
            m = p.numel()
            pgrads.append(egrad[offset:offset + m].view(p.shape).to(p.dtype))
            offset += m
        ds = sgrad.to(sinks.dtype) if sinks is not None else None
        return (dq, dk, dv, ds, None, None, None, None, *pgrads)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, encoder=None, *, causal: bool = False,
              window: Optional[int] = None, chunk: Optional[int] = None, softcap: Optional[float] = None,
              sinks: Optional[torch.Tensor] = None, scale: Optional[float] = None, query_positions=None,
              key_positions=None, key_lengths=None, key_mask=None, query_segments=None, key_segments=None,
              transform_queries: bool = True, transform_keys: bool = True, layout: str = "bshd",
              return_lse: bool = False):
    """Differentiable attention with a posenc encoder: out [B, Sq, Hq, Dv] (``layout='bhsd'``:
    [B, Hq, Sq, Dv] for q [B, Hq, Sq, D]), and the row log-sum-exp [B, Hq, Sq] with ``return_lse``
    (float32 only: the fused forward keeps it). Gradients reach q, k, v, ``sinks`` and the
    parameters of the encoder module. float32: the fused kernels (the sdpa pair in float32 for an
    encoder they do not compute, ``encoder.fused`` False); float64: the double reference."""
    if layout not in ("bshd", "bhsd"):
        raise ValueError(f"layout = {layout!r} is invalid (expected 'bshd' or 'bhsd')")
    _check("q", q)
    if q.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"q: expected float32 or float64, got {str(q.dtype).replace('torch.', '')}")
    _check("k", k, q.dtype)
    _check("v", v, q.dtype)
    for name, x in (("q", q), ("k", k), ("v", v)):
        if x.dim() != 4:
            raise ValueError(f"{name}: expected 4 dimensions [batch, tokens, heads, dim], got shape {tuple(x.shape)}")
    if sinks is not None:
        _check("sinks", sinks)
    enc, params = _resolve(encoder)
    if return_lse and not _fused(q, enc):
        raise ValueError("return_lse: the log-sum-exp comes from the fused float32 forward (q is float64, or the "
                         "encoder is computed by sdpa only)")
    opts = {k_: v_ for k_, v_ in dict(causal=causal, window=window, chunk=chunk, softcap=softcap, scale=scale,
                                      query_positions=query_positions, key_positions=key_positions,
                                      key_lengths=key_lengths, key_mask=key_mask, query_segments=query_segments,
                                      key_segments=key_segments, transform_queries=transform_queries,
                                      transform_keys=transform_keys).items() if v_ is not None}
    out, lse = _AttentionFn.apply(q, k, v, sinks, enc, opts, layout == "bhsd", len(params), *params)
    return (out, lse) if return_lse else out


# ---- the additive hook (embeddings) ---------------------------------------------------------------


class _LearnedFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, positions, table, enc):
        out = x.detach().clone()
        enc.add(out, positions)
        ctx.enc, ctx.positions = enc, positions
        ctx.table_shape, ctx.table_dtype = table.shape, table.dtype
        return out

    @staticmethod
    def backward(ctx, dout):
        grad = torch.zeros(math.prod(ctx.table_shape), dtype=torch.float64)
        ctx.enc.accumulate_gradient(ctx.positions, dout.contiguous(), grad)
        return dout, None, grad.view(ctx.table_shape).to(ctx.table_dtype), None


class LearnedAbsolute(Encoding):
    """A learned absolute table [max_len, d_model] added to the embeddings (GPT-2, BERT; ``offset``
    2 for OPT), rows read by posenc's ``learned_absolute`` (``out_of_range``: 'error',
    'clamp_to_last' or 'zero') and its gradient scattered back by posenc."""

    def __init__(self, max_len: int, d_model: int, offset: int = 0, out_of_range: str = "error", dtype=torch.float32):
        super().__init__()
        self.offset, self.out_of_range = int(offset), out_of_range
        self.weight = nn.Parameter(torch.randn(max_len, d_model, dtype=dtype) * 0.02)
        self.build()

    def build(self):
        enc = _posenc.LearnedAbsolute(self.weight.detach(), offset=self.offset, out_of_range=self.out_of_range)
        return enc, [self.weight]

    def forward(self, x: torch.Tensor, positions=None) -> torch.Tensor:
        """x [..., S, d_model] plus the table rows of ``positions`` (default 0 .. S - 1 per row)."""
        _check("x", x)
        if positions is None:
            positions = torch.arange(x.shape[-2]).expand(x.shape[:-1]).contiguous()
        enc, _ = self.build()
        return _LearnedFn.apply(x, torch.as_tensor(positions, dtype=torch.int64), self.weight, enc)


class Sinusoidal(nn.Module):
    """The fixed sinusoidal table of posenc's ``sinusoidal`` added to the embeddings (no parameters);
    keyword configuration as ``posenc.Sinusoidal``."""

    def __init__(self, d_model: int, **config):
        super().__init__()
        self.encoder = _posenc.Sinusoidal(d_model=d_model, **config)

    def forward(self, x: torch.Tensor, positions=None) -> torch.Tensor:
        if positions is None:
            positions = torch.arange(x.shape[-2])
        table = torch.from_numpy(self.encoder.encode(positions)).to(x.dtype)
        return x + table
