"""The lab's tiny byte-level language model in PyTorch, with posenc's attention op and encoders.

The same model, initialisation, data order and optimiser as the C++ lab (cli/trainer/tiny_lm.hpp):
vocabulary 256, pre-LayerNorm blocks of causal multi-head attention and a GELU (tanh) MLP, a final
LayerNorm, an untied output layer; weights drawn from splitmix64 / Box-Muller streams seeded as
there, so a run starts from the C++ model's exact weights; Adam (0.9 / 0.99, eps 1e-8) with 50
warm-up steps, cosine decay to a tenth, global gradient-norm clip 1. Attention is posenc.torch's
fused op; learned and T5 tables, FIRE's and KERPLE's parameters are nn.Parameters trained through
posenc's backward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

import posenc
import posenc.torch as pt

MASK64 = (1 << 64) - 1


class SplitMix64:
    """splitmix64 and Box-Muller normals, bit for bit as the C++ lab's `tiny::rng`."""

    def __init__(self, seed: int):
        self.s = seed & MASK64

    def next(self) -> int:
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self) -> float:
        return (self.next() >> 11) * 2.0 ** -53

    def normal(self) -> float:
        u = max(self.uniform(), 1e-300)
        v = self.uniform()
        return math.sqrt(-2.0 * math.log(u)) * math.cos(6.283185307179586 * v)

    def below(self, n: int) -> int:
        return self.next() % n

    def normals(self, shape, std: float) -> torch.Tensor:
        n = int(np.prod(shape))
        vals = np.fromiter((self.normal() * std for _ in range(n)), dtype=np.float64, count=n)
        return torch.from_numpy(vals.astype(np.float32).reshape(shape))


@dataclass
class LMConfig:
    vocab: int = 256
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    d_ff: int = 256
    lr: float = 3e-3
    warmup: int = 50
    steps: int = 1000
    clip: float = 1.0
    seed: int = 1


ENCODERS = ("nope", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "fire", "kerple", "kerple-power")


class Block(nn.Module):
    def __init__(self, c: LMConfig, g: SplitMix64):
        super().__init__()
        d, s, so = c.d_model, 0.02, 0.02 / math.sqrt(2.0 * c.layers)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)
        self.wq, self.wk, self.wv = (nn.Parameter(g.normals((d, d), s)) for _ in range(3))
        self.wo = nn.Parameter(g.normals((d, d), so))
        self.w1 = nn.Parameter(g.normals((d, c.d_ff), s))
        self.b1 = nn.Parameter(torch.zeros(c.d_ff))
        self.w2 = nn.Parameter(g.normals((c.d_ff, d), so))
        self.b2 = nn.Parameter(torch.zeros(d))


class TinyLM(nn.Module):
    """The model around one encoding (`name` in ENCODERS) trained at length `train_len`."""

    def __init__(self, c: LMConfig, name: str, train_len: int):
        super().__init__()
        if name not in ENCODERS:
            raise ValueError(f"lab: unknown encoder '{name}' (expected one of {', '.join(ENCODERS)})")
        self.c, self.name, self.hd = c, name, c.d_model // c.heads
        d, H = c.d_model, c.heads
        g = SplitMix64(c.seed)
        tables = SplitMix64(c.seed ^ 0x7AB1E5)
        self.tok = nn.Parameter(g.normals((c.vocab, d), 1.0))
        self.pos = None
        self.t5 = None
        if name == "learned":
            self.pos = pt.LearnedAbsolute(max_len=train_len, d_model=d, out_of_range="clamp_to_last")
            with torch.no_grad():
                self.pos.weight.copy_(tables.normals((train_len, d), 0.1))
        if name == "t5":
            self.t5 = pt.T5Bias(num_heads=H, num_buckets=32, max_distance=128, bidirectional=False)
            with torch.no_grad():
                self.t5.weight.copy_(tables.normals((32, H), 0.1))
        self.fire = self.kerple = None
        if name == "fire":  # the paper's MLP (32 units), c = 0.1, L = train_len, random hidden layer, zero output
            self.fire = pt.FIRE(num_heads=H, mlp_width=32, c=0.1, threshold=float(train_len))
            fg = SplitMix64(c.seed ^ 0xF1E5)
            hidden = [(fg.normal(), 0.1 * fg.normal()) for _ in range(32)]
            with torch.no_grad():
                self.fire.w1.copy_(torch.tensor([w for w, _ in hidden]))
                self.fire.b1.copy_(torch.tensor([b for _, b in hidden]))
        if name in ("kerple", "kerple-power"):  # the authors' initial values: r1 in [0, 2), r2 in [0, 1)
            self.kerple = pt.KERPLE(num_heads=H, kernel="power" if name == "kerple-power" else "logarithmic")
            kg = SplitMix64(c.seed ^ 0x6E6E1)
            r1 = [2 * kg.uniform() for _ in range(H)]
            r2 = [kg.uniform() for _ in range(H)]
            with torch.no_grad():
                self.kerple.r1.copy_(torch.tensor(r1))
                self.kerple.r2.copy_(torch.tensor(r2))
            self.kerple.build()  # projected as the authors do
        self.blocks = nn.ModuleList([Block(c, g) for _ in range(c.layers)])
        self.lnf = nn.LayerNorm(d, eps=1e-5)
        self.out = nn.Parameter(g.normals((d, c.vocab), 0.02))
        self.sinusoidal = pt.Sinusoidal(d) if name == "sinusoidal" else None
        self.set_encoder(None)

    def set_encoder(self, encoder):
        """The attention encoder; None: the model's own (RoPE with theta 1e4, ALiBi, xPos, T5, FIRE,
        KERPLE, NoPE)."""
        if encoder is not None:
            self.attn_encoder = encoder
            return
        hd, H = self.hd, self.c.heads
        self.attn_encoder = {
            "rope": posenc.RoPE(head_dim=hd, theta=10000.0),
            "alibi": posenc.ALiBi(num_heads=H),
            "xpos": posenc.XPos(head_dim=hd),
            "t5": self.t5,
            "fire": self.fire,
            "kerple": self.kerple,
            "kerple-power": self.kerple,
        }.get(self.name)

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy (nats per byte) of predicting seq[:, 1:] from seq[:, :-1]."""
        x_ids, y_ids = seq[:, :-1], seq[:, 1:]
        B, S = x_ids.shape
        H, hd = self.c.heads, self.hd
        x = self.tok[x_ids]
        if self.sinusoidal is not None:
            x = self.sinusoidal(x)
        if self.pos is not None:
            x = self.pos(x)
        for b in self.blocks:
            h = b.ln1(x)
            q, k, v = ((h @ w).view(B, S, H, hd) for w in (b.wq, b.wk, b.wv))
            o = pt.attention(q, k, v, self.attn_encoder, causal=True).reshape(B, S, -1)
            x = x + o @ b.wo
            u = b.ln2(x) @ b.w1 + b.b1
            x = x + torch.nn.functional.gelu(u, approximate="tanh") @ b.w2 + b.b2
        logits = self.lnf(x) @ self.out
        return torch.nn.functional.cross_entropy(logits.reshape(-1, self.c.vocab), y_ids.reshape(-1))


class Trainer:
    """Adam with the C++ lab's schedule and clipping; `step(batch)` returns the batch loss."""

    def __init__(self, model: nn.Module, c: LMConfig):
        self.model, self.c, self.t = model, c, 0
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.opt = torch.optim.Adam(self.params, lr=c.lr, betas=(0.9, 0.99), eps=1e-8)

    def step(self, loss_fn) -> float:
        self.t += 1
        c = self.c
        self.opt.zero_grad(set_to_none=False)
        loss = loss_fn()
        loss.backward()
        norm = math.sqrt(sum(float(p.grad.double().square().sum()) for p in self.params))
        clip = min(1.0, c.clip / (norm + 1e-12))
        if clip < 1.0:
            for p in self.params:
                p.grad.mul_(clip)
        progress = min(1.0, self.t / max(1, c.steps))
        warm = min(1.0, self.t / max(1, c.warmup))
        lr = c.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
        for gparams in self.opt.param_groups:
            gparams["lr"] = lr
        self.opt.step()
        return float(loss)
