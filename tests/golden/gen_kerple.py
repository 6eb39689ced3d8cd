#!/usr/bin/env python3
"""Writes tests/golden/kerple.json: KERPLE's logarithmic and power biases computed by the authors' code.

Run once with Debian's python3-torch (1.13): /usr/bin/python3 tests/golden/gen_kerple.py
It reads chijames/KERPLE (fetched to /work/.mirror/chijames+KERPLE/repo; commit recorded below) with
git; nothing is installed. The test suite reads the JSON only.

What runs, unmodified (extracted by name, reference_source.py), from megatron/mpu/layers.py:
ParallelKerpleLog and ParallelKerplePower (pos_emb "kerple_power_ap_": learned a and p, no weight
kernel), forward(x) on zero attention scores [1, heads, Sq, Sk]: the returned tensor is the bias.
Both clamp their parameters in place at every forward (a, p >= 0.01, the power's p <= 2); the
parameters below include values outside those ranges, and the cases record the values the bias used
(`*_used`). Shims: one model-parallel rank (get_model_parallel_world_size/rank), and
torch.cuda.current_device() returns "cpu". `*_fp32` runs with params_dtype float32, `*_fp64` float64.
"""
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_source as rs  # noqa: E402

REPO = "/work/.mirror/chijames+KERPLE/repo"
PATH = "megatron/mpu/layers.py"
PRELUDE = """
import math
import torch
from torch.nn.parameter import Parameter

def get_model_parallel_world_size():
    return 1

def get_model_parallel_rank():
    return 0
"""

torch.cuda.current_device = lambda: "cpu"  # the modules allocate on the current CUDA device
K = rs.reference(REPO, "HEAD", PATH, ["ParallelKerpleLog", "ParallelKerplePower"], "kerple_layers", PRELUDE)


def run(kind, a, p, seq, dtype, decode=False):
    heads = len(a)
    args = types.SimpleNamespace(
        num_attention_heads=heads, pos_emb="kerple_log" if kind == "log" else "kerple_power_ap_", params_dtype=dtype
    )
    mod = K.ParallelKerpleLog(args) if kind == "log" else K.ParallelKerplePower(args)
    with torch.no_grad():
        mod.bias_a.copy_(torch.tensor(a, dtype=dtype)[:, None, None])
        mod.bias_p.copy_(torch.tensor(p, dtype=dtype)[:, None, None])
    x = torch.zeros(1, heads, 1 if decode else seq, seq, dtype=dtype)
    bias = mod(x)[0]
    return bias, mod.bias_a.detach()[:, 0, 0], mod.bias_p.detach()[:, 0, 0]


def case(case_id, kind, a, p, seq, decode=False):
    b32, _, _ = run(kind, a, p, seq, torch.float32, decode)
    b64, a_used, p_used = run(kind, a, p, seq, torch.float64, decode)
    return {
        "id": case_id,
        "kind": kind,
        "seq": seq,
        "decode": decode,
        "a": a,
        "p": p,
        "a_used": rs.to_list(a_used),
        "p_used": rs.to_list(p_used),
        "expected": {"bias_fp32": rs.to_list(b32.double()), "bias_fp64": rs.to_list(b64)},
    }


def main():
    torch.set_num_threads(1)
    a = [0.3, 0.005, 1.4, 0.9]  # 0.005 is below the authors' 0.01 floor
    p_log = [0.5, 1.7, 0.003, 2.2]
    p_pow = [0.5, 1.0, 2.7, 0.001]  # 2.7 above the 2 ceiling, 0.001 below the floor
    cases = [
        case("log", "log", a, p_log, 12),
        case("log_decode", "log", a, p_log, 9, decode=True),
        case("power", "power", [1.2, 0.004, 0.7, 2.0], p_pow, 12),
        case("power_decode", "power", [1.2, 0.004, 0.7, 2.0], p_pow, 9, decode=True),
        case("log_long_decode", "log", [0.05, 2.0], [1.0, 0.25], 700, decode=True),
        case("power_long_decode", "power", [0.05, 2.0], [1.5, 0.25], 700, decode=True),
    ]
    payload = {
        "family": "kerple",
        "split": "reference",
        "source": {
            "repo": "chijames/KERPLE",
            "commit": rs.full_commit(REPO, "HEAD"),
            "file": PATH,
            "functions": ["ParallelKerpleLog", "ParallelKerplePower"],
            "generator": "tests/golden/gen_kerple.py",
        },
        "number_format": "floats are Python repr of doubles",
        "semantics": "bias[h][i][j] = -p_h log(1 + a_h (i - j)) (log) or -a_h (i - j)^p_h (power) for j <= i, "
        "0 for j > i (the authors' tril distance matrix); decode: the row of the last query (i = seq - 1)",
        "cases": cases,
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kerple.json")
    rs.write(out, payload)
    print("wrote", out, len(cases), "cases")


if __name__ == "__main__":
    main()
