#!/usr/bin/python3
"""Forward + backward of posenc.torch.attention against the same computation in plain torch on the CPU,
one thread: time and peak memory side by side, with ALiBi, T5 and RoPE, causal, 2048 tokens, 8 heads
of 64 (the default; flags change it).

The torch side is the fastest form torch 1.13 offers on the CPU: it has no fused attention
(F.scaled_dot_product_attention arrived in 2.0), so it is matmul - softmax - matmul with the
positional bias and the causal mask materialised as one additive [H, S, S] tensor (RoPE: rotated
q, k, HF's rotate_half). posenc's side is the autograd op (fused forward keeping the log-sum-exp,
fused attention_backward), and also the two raw C++ calls through the binding on preallocated
arrays: op / raw is what the autograd glue costs. Each case runs in a fresh process; its peak
memory is the growth of the process's peak resident set over the inputs (ru_maxrss).

torch's matmuls run on whatever libblas.so.3 the system resolves: Debian installs the reference
BLAS with python3-torch unless OpenBLAS is installed, which makes torch's side several times slower.
The table names the library that ran; compare against OpenBLAS (libopenblas0-pthread), e.g. unpacked
beside the build without installing it:

    apt-get download libopenblas0-pthread && dpkg -x libopenblas0-pthread_*.deb /tmp/openblas
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
        LD_LIBRARY_PATH=/tmp/openblas/usr/lib/x86_64-linux-gnu/openblas-pthread \
        PYTHONPATH=build/release/python python/bench/bench_attention.py --markdown docs/performance.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_case(impl: str, enc: str, S: int, H: int, D: int, reps: int, clock: str = "wall") -> dict:
    os.environ["POSENC_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
    import posenc
    import posenc.torch as pt

    posenc.set_num_threads(1)
    torch.manual_seed(0)
    q, k, v, gout = (torch.randn(1, S, H, D) for _ in range(4))
    table = torch.randn(32, H) * 0.1
    base = peak_kib()

    if impl == "posenc":
        if enc == "alibi":
            encoder = posenc.ALiBi(num_heads=H)
        elif enc == "rope":
            encoder = posenc.RoPE(head_dim=D)
        else:
            encoder = pt.T5Bias(num_heads=H, bidirectional=False)
            with torch.no_grad():
                encoder.weight.copy_(table)
        params = [encoder.weight] if enc == "t5" else []

        def step():
            qq, kk, vv = (x.detach().requires_grad_() for x in (q, k, v))
            out = pt.attention(qq, kk, vv, encoder, causal=True)
            out.backward(gout)
            for p in params:
                p.grad = None
            return qq.grad
    elif impl == "posenc-raw":
        import numpy as np

        encoder = {"alibi": posenc.ALiBi(num_heads=H), "rope": posenc.RoPE(head_dim=D),
                   "t5": posenc.T5Bias(table, bidirectional=False)}[enc]
        qn, kn, vn, gn = (x.numpy() for x in (q, k, v, gout))
        out = np.empty_like(qn)
        lse = np.empty(H * S, np.float32)
        dq, dk, dv = (np.empty_like(qn) for _ in range(3))
        eg = np.zeros(encoder.parameter_count) if encoder.parameter_count else None

        def step():
            posenc._posenc._attention(qn, kn, vn, out, encoder, lse, causal=True)
            posenc._posenc._attention_backward(qn, kn, vn, out, lse, gn, dq, dk, dv, encoder, eg, None, causal=True)
            return dq
    else:
        pos = torch.arange(S)
        causal_mask = torch.full((S, S), float("-inf")).triu(1)
        if enc == "alibi":
            slopes = torch.tensor(posenc.alibi_slopes(H), dtype=torch.float32)
            alibi_bias = (-slopes[:, None, None] * (pos[None, :] - pos[:, None]).abs()) + causal_mask
        if enc == "rope":
            inv = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
            f = pos[:, None].float() * inv
            emb = torch.cat((f, f), -1)
            cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
        if enc == "t5":
            w = table.clone().requires_grad_()
            rel = pos[None, :] - pos[:, None]
            bucket = torch.as_tensor(posenc.T5Bias(table, bidirectional=False).buckets(rel.reshape(-1))).view(S, S)

        def rot(x):
            x1, x2 = x[..., : D // 2], x[..., D // 2:]
            return x * cos + torch.cat((-x2, x1), -1) * sin

        def step():
            qq, kk, vv = (x.detach().requires_grad_() for x in (q, k, v))
            qh, kh, vh = qq, kk, vv
            if enc == "rope":
                qh, kh = rot(qq), rot(kk)
            qh, kh, vh = (x.transpose(1, 2) for x in (qh, kh, vh))
            s = torch.matmul(qh, kh.transpose(-1, -2)) * D ** -0.5
            if enc == "alibi":
                s = s + alibi_bias
            elif enc == "t5":
                s = s + (w[bucket].permute(2, 0, 1) + causal_mask)
            else:
                s = s + causal_mask
            out = torch.matmul(torch.softmax(s, -1), vh).transpose(1, 2)
            out.backward(gout)
            if enc == "t5":
                w.grad = None
            return qq.grad

    now = time.perf_counter if clock == "wall" else time.process_time
    step()  # warm-up
    times = []
    for _ in range(reps):
        t0 = now()
        step()
        times.append(now() - t0)
    return {"seconds": statistics.median(times), "min": min(times), "peak_mib": (peak_kib() - base) / 1024.0}


def spawn(impl, enc, a) -> dict:
    env = dict(os.environ, POSENC_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, os.path.abspath(__file__), "--case", impl, enc, "--tokens", str(a.tokens), "--heads",
           str(a.heads), "--head-dim", str(a.head_dim), "--reps", str(a.reps if impl != "torch" else a.torch_reps),
           "--clock", a.clock]
    res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        name = re.search(r"Model name:\s*(.+)", out).group(1).strip()
        fam = re.search(r"CPU family:\s*(\d+)", out)
        model = re.search(r"Model:\s*(\d+)", out)
        extra = f" (family {fam.group(1)} model {model.group(1)})" if fam and model else ""
    except Exception:  # noqa: BLE001 - lscpu missing: name the platform
        name, extra = platform.processor() or platform.machine(), ""
    import posenc

    return f"{name}{extra}, {os.cpu_count()} CPUs; posenc kernels: {posenc._posenc._isa()}"


def blas() -> str:
    """The BLAS torch loaded (from this process's memory map) and OpenBLAS's kernel, if it is OpenBLAS."""
    import ctypes

    import torch

    torch.randn(4, 4) @ torch.randn(4, 4)
    libs = sorted({line.split()[-1] for line in open("/proc/self/maps") if "blas" in line.split()[-1].lower()})
    name = ", ".join(os.path.basename(x) for x in libs) or "none found"
    for lib in libs:
        try:
            core = ctypes.CDLL(lib).openblas_get_corename
            core.restype = ctypes.c_char_p
            return f"OpenBLAS ({name}; kernel {core().decode()})"
        except (OSError, AttributeError):
            continue
    return f"{name} (the reference BLAS)" if "libblas" in name else name


def table(a, results) -> str:
    import torch

    lines = [
        f"Machine: {machine()}; torch {torch.__version__} on {blas()}, one thread; run "
        f"{datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()}.",
        f"Command: `python/bench/bench_attention.py --tokens {a.tokens} --heads {a.heads} --head-dim {a.head_dim}"
        f"{' --clock cpu' if a.clock == 'cpu' else ''}`"
        " (the OpenBLAS line of the script's header for torch's best BLAS)",
        "",
        f"Causal self-attention, 1 x {a.tokens} tokens, {a.heads} heads of {a.head_dim}, float32, forward + backward "
        f"(median of the runs; {'wall-clock' if a.clock == 'wall' else 'process CPU'} time). Memory: peak resident "
        "growth over the inputs.",
        "",
        "| encoding | torch 1.13 matmul-softmax-matmul | posenc.torch.attention | speed-up | torch peak | posenc peak |"
        " posenc raw C++ calls | op / raw |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for enc in ("alibi", "t5", "rope"):
        t, p, r = results[(enc, "torch")], results[(enc, "posenc")], results[(enc, "posenc-raw")]
        name = {"alibi": "ALiBi", "t5": "T5 (table trained)", "rope": "RoPE"}[enc]
        lines.append(
            f"| {name} | {t['seconds'] * 1e3:.0f} ms | {p['seconds'] * 1e3:.1f} ms | "
            f"{t['seconds'] / p['seconds']:.0f}x | {t['peak_mib']:.0f} MiB | {p['peak_mib']:.1f} MiB | "
            f"{r['seconds'] * 1e3:.1f} ms | {p['seconds'] / r['seconds']:.2f}x |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", nargs=2, metavar=("IMPL", "ENC"), help=argparse.SUPPRESS)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--reps", type=int, default=7, help="timed runs of each posenc case")
    ap.add_argument("--torch-reps", type=int, default=3, help="timed runs of each torch case")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time steps by the wall clock or by the process's CPU time (robust to other load)")
    ap.add_argument("--markdown", metavar="FILE", help="replace the python-bench section of FILE")
    a = ap.parse_args()
    if a.case:
        print(json.dumps(run_case(a.case[0], a.case[1], a.tokens, a.heads, a.head_dim, a.reps, a.clock)))
        return
    results = {}
    for enc in ("alibi", "t5", "rope"):
        for impl in ("torch", "posenc", "posenc-raw"):
            results[(enc, impl)] = spawn(impl, enc, a)
            print(f"{enc:6s} {impl:10s} {results[(enc, impl)]}", file=sys.stderr)
    md = table(a, results)
    print(md)
    if a.markdown:
        text = open(a.markdown).read()
        begin, end = "<!-- BEGIN python-bench -->", "<!-- END python-bench -->"
        if begin not in text:
            raise SystemExit(f"{a.markdown}: no {begin} marker")
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        open(a.markdown, "w").write(head + begin + "\n" + md + end + tail)


if __name__ == "__main__":
    main()
