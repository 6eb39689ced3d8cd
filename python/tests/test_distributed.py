"""python3 -m posenc.lab --nproc 2 (torch.distributed, gloo over the loopback, DistributedDataParallel)
against one process with the same global batch and seed: a few steps of two models give the same
table within 1e-4 bits per byte (the two runs differ only in how the batch's gradient is summed:
within one process, or per half and then all-reduced)."""

import json
import os
import subprocess
import sys


def run(tmp_path, nproc):
    out = tmp_path / f"lab{nproc}.json"
    args = [sys.executable, "-m", "posenc.lab", "--encoders", "rope,t5", "--rope-scalings", "rope-yarn",
            "--train-len", "16", "--multiples", "2", "--steps", "8", "--batch", "4", "--eval-tokens", "64",
            "--nproc", str(nproc), "--threads", "1", "--quiet", "--json", str(out)]
    res = subprocess.run(args, capture_output=True, text=True, timeout=240, env=dict(os.environ))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "| rope |" in res.stdout and "| rope-yarn (eval) |" in res.stdout
    return json.loads(out.read_text())


def test_two_processes_equal_one(tmp_path):
    one, two = run(tmp_path, 1), run(tmp_path, 2)
    assert one["processes"] == 1 and two["processes"] == 2
    assert [l["name"] for l in one["lines"]] == [l["name"] for l in two["lines"]] == ["rope", "t5", "rope-yarn (eval)"]
    for a, b in zip(one["lines"], two["lines"]):
        for x, y in zip(a["bits_per_byte"], b["bits_per_byte"]):
            assert abs(x - y) <= 1e-4, (a["name"], x, y)
