"""Training and evaluation of the lab (see posenc.lab): corpus, data order, the bits-per-byte measure
and the table, as the C++ lab (cli/trainer/lab.hpp) defines them, on one process or on the
ranks of a torch.distributed group (each rank takes its slice of every global batch; gradients are
averaged by DistributedDataParallel; evaluation windows are shared out and their losses summed)."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import torch

import posenc

from .model import ENCODERS, LMConfig, SplitMix64, TinyLM, Trainer

SCALINGS = ("rope-pi", "rope-yarn")


@dataclass
class LabOptions:
    encoders: List[str] = field(default_factory=lambda: ["sinusoidal", "rope", "alibi", "nope"])
    rope_scalings: List[str] = field(default_factory=lambda: ["rope-pi", "rope-yarn"])
    train_len: int = 64
    multiples: int = 5
    steps: int = 1200
    batch: int = 16
    eval_tokens: int = 8192
    corpus: str = ""
    model: LMConfig = field(default_factory=LMConfig)
    seeds: int = 1  # models per encoding: seeds model.seed .. model.seed + seeds - 1


def read_corpus(path: str = ""):
    """The corpus bytes and its path: a file, or a directory's regular files (no symlinks) in name
    order; empty: /usr/share/common-licenses (Debian's base-files), as the C++ lab."""
    path = path or "/usr/share/common-licenses"
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if os.path.isfile(os.path.join(path, n)) and not os.path.islink(os.path.join(path, n)))
        files = [os.path.join(path, n) for n in names]
    else:
        files = [path]
    data = b"".join(open(f, "rb").read() for f in files)
    if len(data) < 4096:
        raise ValueError(f"lab: the corpus {path} has fewer than 4096 bytes")
    return data, path


def split(data: bytes):
    """Every tenth block of 4 KiB is held out for evaluation."""
    train, held = bytearray(), bytearray()
    for i in range(0, len(data), 4096):
        (held if (i // 4096) % 10 == 9 else train).extend(data[i:i + 4096])
    return torch.frombuffer(train, dtype=torch.uint8).long(), torch.frombuffer(held, dtype=torch.uint8).long()


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def bits_per_byte(model: TinyLM, text: torch.Tensor, E: int, tokens: int) -> float:
    """Mean bits per byte over whole windows of E + 1 bytes spread evenly over `text` (the C++ lab's
    windows); under torch.distributed the windows are shared out among the ranks."""
    need = E + 1
    if len(text) < need:
        return float("nan")
    windows = max(1, tokens // E)
    span = len(text) - need
    offs = [0 if windows == 1 else span * w // (windows - 1) for w in range(windows)]
    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    mine = offs[rank::world]
    total = torch.zeros(1, dtype=torch.float64)
    with torch.no_grad():
        for i in range(0, len(mine), 32):
            chunk = torch.stack([text[o:o + need] for o in mine[i:i + 32]])
            total += float(model(chunk)) * len(chunk)
    if dist:
        dist.all_reduce(total)
    return float(total) / windows / math.log(2.0)


def _eval_rope(name: str, E: int, L: int, hd: int):
    f = E / L
    scaling = None
    if f > 1:
        scaling = (posenc.LinearScaling(factor=f) if name == "rope-pi"
                   else posenc.YaRNScaling(factor=f, original_max_position=L))
    return posenc.RoPE(head_dim=hd, theta=10000.0, scaling=scaling)


def train_model(name: str, o: LabOptions, train: torch.Tensor,
                progress: Optional[Callable[[str, int, float], None]] = None, seed: Optional[int] = None):
    """Trains one model (with `seed`, default o.model.seed); returns (model, mean loss of the last 50
    steps in nats per byte)."""
    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    if o.batch % world:
        raise ValueError(f"lab: the batch {o.batch} must be a multiple of the process count {world}")
    cfg = LMConfig(**{**o.model.__dict__, "steps": o.steps, "seed": o.model.seed if seed is None else seed})
    model = TinyLM(cfg, name, o.train_len)
    net = model
    if dist:
        net = torch.nn.parallel.DistributedDataParallel(model)
    trainer = Trainer(net, cfg)
    data_rng = SplitMix64(cfg.seed ^ 0xDA7A5EED)
    S = o.train_len
    per = o.batch // world
    tail, tail_n = 0.0, 0
    for s in range(o.steps):
        offs = [data_rng.below(len(train) - S - 1) for _ in range(o.batch)]  # the global batch, every rank
        mine = offs[rank * per:(rank + 1) * per]
        seq = torch.stack([train[x:x + S + 1] for x in mine])
        loss = trainer.step(lambda: net(seq))
        if dist:
            t = torch.tensor([loss], dtype=torch.float64)
            dist.all_reduce(t)
            loss = float(t) / world
        if s >= o.steps - 50:
            tail += loss
            tail_n += 1
        if progress:
            progress(name if o.seeds == 1 else f"{name} seed {cfg.seed}", s + 1, loss)
    return model, tail / max(1, tail_n)


def check_options(o: LabOptions):
    for e in o.encoders:
        if e not in ENCODERS:
            raise ValueError(f"lab: unknown encoder '{e}' (expected one of {', '.join(ENCODERS)})")
    for s in o.rope_scalings:
        if s not in SCALINGS:
            raise ValueError(f"lab: unknown RoPE scaling '{s}' (expected rope-pi or rope-yarn)")
        if "rope" not in o.encoders:
            raise ValueError(f"lab: '{s}' evaluates the RoPE model: add rope to the encoders")
    if o.train_len < 8 or min(o.multiples, o.steps, o.batch, o.eval_tokens, o.seeds) < 1:
        raise ValueError("lab: train length >= 8 and positive multiples, steps, batch, eval tokens and seeds")


def one_seed(o: LabOptions, seed: int, train, held, lengths, progress) -> list:
    """Every line of one seed: the encodings in order, then the RoPE scalings by name."""
    lines, scaled = [], []
    hd = o.model.d_model // o.model.heads
    for name in o.encoders:
        model, tail = train_model(name, o, train, progress, seed)
        model.eval()
        lines.append({"name": name, "bits_per_byte": [bits_per_byte(model, held, E, o.eval_tokens) for E in lengths],
                      "final_train_loss": tail})
        if name == "rope":
            for sname in o.rope_scalings:
                bpb = []
                for E in lengths:
                    model.set_encoder(_eval_rope(sname, E, o.train_len, hd))
                    bpb.append(bits_per_byte(model, held, E, o.eval_tokens))
                model.set_encoder(None)
                scaled.append({"name": sname + " (eval)", "bits_per_byte": bpb, "final_train_loss": float("nan")})
    return lines + sorted(scaled, key=lambda x: x["name"])


def mean_over_seeds(per_seed: list) -> list:
    """Each line's mean over the seeds, with the sample standard deviation ("spread") when several."""
    if len(per_seed) == 1:
        return per_seed[0]
    out = []
    for i, first in enumerate(per_seed[0]):
        runs = [seed[i] for seed in per_seed]
        bpb = torch.tensor([r["bits_per_byte"] for r in runs], dtype=torch.float64)  # [seeds, columns]
        out.append({"name": first["name"], "bits_per_byte": bpb.mean(0).tolist(), "spread": bpb.std(0).tolist(),
                    "final_train_loss": sum(r["final_train_loss"] for r in runs) / len(runs)})
    return out


def columns_where_order_differs(per_seed: list) -> List[int]:
    """The columns at which ranking the lines by bits per byte gives another order for some seed."""
    out = []
    for k in range(len(per_seed[0][0]["bits_per_byte"])):
        orders = [sorted(range(len(seed)), key=lambda i: seed[i]["bits_per_byte"][k]) for seed in per_seed]
        if any(x != orders[0] for x in orders):
            out.append(k)
    return out


def run_lab(o: LabOptions, progress=None) -> dict:
    """Trains and evaluates every requested model (o.seeds of each); the result as a dict (the
    table's content: with several seeds, each line's mean, its spread and the columns at which the
    seeds order the encodings differently)."""
    check_options(o)
    t0 = time.time()
    data, path = read_corpus(o.corpus)
    train, held = split(data)
    lengths = [o.train_len << k for k in range(o.multiples)]
    per_seed = [one_seed(o, o.model.seed + s, train, held, lengths, progress) for s in range(o.seeds)]
    dist = _dist()
    return {"lengths": lengths, "lines": mean_over_seeds(per_seed), "seeds": o.seeds,
            "unstable_columns": columns_where_order_differs(per_seed), "corpus": path, "train_bytes": len(train),
            "heldout_bytes": len(held), "seconds": time.time() - t0,
            "processes": dist.get_world_size() if dist else 1, "options": o}


def table(r: dict) -> str:
    """The result as the C++ lab's markdown table."""
    head = "| encoding |" + "".join(f" {E} ({'L' if k == 0 else str(1 << k) + 'L'}) |"
                                    for k, E in enumerate(r["lengths"]))
    rows = [head, "|---|" + "---|" * len(r["lengths"])]
    for line in r["lines"]:
        spread = line.get("spread")
        rows.append(f"| {line['name']} |" + "".join(f" {v:.3f}" + (f" ± {spread[k]:.3f}" if spread else "") + " |"
                                                     for k, v in enumerate(line["bits_per_byte"])))
    text = "\n".join(rows) + "\n"
    if r.get("seeds", 1) > 1:
        text += f"\nMean ± sample standard deviation over {r['seeds']} seeds. "
        unstable = r.get("unstable_columns", [])
        if not unstable:
            text += "Every seed orders the encodings the same way in every column.\n"
        else:
            names = ", ".join(f"{r['lengths'][k]} ({'L' if k == 0 else str(1 << k) + 'L'})" for k in unstable)
            text += (f"The order of the encodings differs between seeds at {names}: there, differences within the "
                     "spread do not rank them.\n")
    return text
