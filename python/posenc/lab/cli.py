"""The command line of the lab, python3 -m posenc.lab (see posenc.lab).

One process by default; ``--nproc N`` starts N processes on this machine joined by torch.distributed
(gloo over the loopback), each training on its slice of every global batch; under ``torchrun`` (RANK,
WORLD_SIZE and MASTER_ADDR set) it joins the group torchrun made."""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
import tempfile

import torch

from .model import LMConfig
from .run import LabOptions, run_lab, table


def parse(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m posenc.lab", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoders", default="sinusoidal,rope,alibi,nope",
                    help="comma-separated: nope, sinusoidal, learned, rope, alibi, t5, xpos, fire, kerple, "
                         "kerple-power")
    ap.add_argument("--rope-scalings", default="rope-pi,rope-yarn",
                    help="evaluation-time RoPE scalings (need rope): rope-pi, rope-yarn; '' for none")
    ap.add_argument("--train-len", type=int, default=64)
    ap.add_argument("--multiples", type=int, default=5, help="evaluate at L x 2^0 .. 2^(multiples - 1)")
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=16, help="the global batch (split among the processes)")
    ap.add_argument("--eval-tokens", type=int, default=8192)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1,
                    help="models per encoding (seeds seed .. seed + seeds - 1): mean and spread, and the columns "
                         "where the seeds order the encodings differently")
    ap.add_argument("--corpus", default="", help="a text file or directory (default /usr/share/common-licenses)")
    ap.add_argument("--nproc", type=int, default=1, help="processes on this machine (torch.distributed, gloo)")
    ap.add_argument("--threads", type=int, default=0, help="threads per process (0: the cores / nproc)")
    ap.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    return ap.parse_args(argv)


def options(a) -> LabOptions:
    return LabOptions(encoders=[e for e in a.encoders.split(",") if e],
                      rope_scalings=[s for s in a.rope_scalings.split(",") if s], train_len=a.train_len,
                      multiples=a.multiples, steps=a.steps, batch=a.batch, eval_tokens=a.eval_tokens,
                      corpus=a.corpus, model=LMConfig(seed=a.seed), seeds=a.seeds)


def set_threads(a, world: int):
    import posenc

    n = a.threads or max(1, (os.cpu_count() or 1) // world)
    torch.set_num_threads(n)
    posenc.set_num_threads(n)


def work(a, out_path=None):
    """Runs the lab in this process (a rank of the group when one is initialised)."""
    import torch.distributed as dist

    rank = dist.get_rank() if dist.is_initialized() else 0
    every = max(1, a.steps // 10)

    def progress(name, step, loss):
        if rank == 0 and not a.quiet and (step % every == 0 or step == a.steps):
            print(f"{name} step {step}/{a.steps} loss {loss / math.log(2):.3f} bits/byte", file=sys.stderr, flush=True)

    r = run_lab(options(a), progress)
    if rank == 0:
        r = {k: v for k, v in r.items() if k != "options"}
        if out_path:
            with open(out_path, "w") as f:
                json.dump(r, f)
    return r


def _worker(rank, a, world, port, out_path):
    import torch.distributed as dist

    os.environ["POSENC_NUM_THREADS"] = str(a.threads or max(1, (os.cpu_count() or 1) // world))
    set_threads(a, world)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        work(a, out_path if rank == 0 else None)
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def report(a, r) -> str:
    o = options(a)
    seeds = f"seed {o.model.seed}" if o.seeds == 1 else f"seeds {o.model.seed} to {o.model.seed + o.seeds - 1}"
    return (f"Corpus: {r['corpus']} ({r['train_bytes']} bytes for training, {r['heldout_bytes']} for evaluation). "
            f"Training length L = {o.train_len}, {o.steps} steps of {o.batch} sequences; model: {o.model.layers} "
            f"layers, d_model {o.model.d_model}, {o.model.heads} heads; {seeds}. {r['seconds']:.0f} s on "
            f"{r['processes']} process{'es' if r['processes'] > 1 else ''} (posenc.lab, PyTorch "
            f"{torch.__version__}). Bits per byte on evaluation text, lower is better.\n\n" + table(r))


def main(argv=None):
    a = parse(argv)
    if a.nproc < 1:
        raise SystemExit("--nproc: expected >= 1")
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun
        import torch.distributed as dist

        world = int(os.environ["WORLD_SIZE"])
        set_threads(a, int(os.environ.get("LOCAL_WORLD_SIZE", world)))
        dist.init_process_group("gloo")
        r = work(a)
        if dist.get_rank() == 0:
            print(report(a, r))
        dist.destroy_process_group()
        return
    if a.nproc == 1:
        set_threads(a, 1)
        r = work(a)
    else:
        import torch.multiprocessing as mp

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "result.json")
            mp.spawn(_worker, args=(a, a.nproc, free_port(), path), nprocs=a.nproc, join=True)
            with open(path) as f:
                r = json.load(f)
    print(report(a, r))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)


