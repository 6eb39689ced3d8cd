"""The code the documents show runs: the ten-line training step of docs/python.md and the README's
Python example (each block is read from the document and executed)."""

import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def block(path, heading):
    text = open(os.path.join(ROOT, path)).read()
    m = re.search(r"^#+ " + re.escape(heading) + r"\n.*?```python\n(.*?)^```", text, re.S | re.M)
    assert m, f"{path}: no python block under '{heading}'"
    return m.group(1)


def test_training_step_of_docs_python_md():
    code = block("docs/python.md", "A training step in ten lines")
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) <= 10
    env = {}
    exec(compile(code, "docs/python.md", "exec"), env)
    assert env["t5"].weight.grad is not None and env["loss"].item() > 0


def test_readme_python_example():
    code = block("README.md", "From Python and PyTorch")
    env = {}
    exec(compile(code, "README.md", "exec"), env)
    assert env["out"].shape == (2, 1024, 8, 64) and env["q"].grad is not None
