"""Runs functions and classes of a pinned reference source without installing the reference.

The golden generators (gen_*.py in this folder) take the definitions they need out of a file at a
fixed commit of a fetched repository (`git show COMMIT:PATH`), by name, with Python's ast module,
and import them as one module written to a temporary folder (torch.jit.script needs a real source
file). A `prelude` supplies the imports and small shims for names the extracted code uses (e.g.
`nn.Buffer`, absent from torch 1.13). Nothing here is needed by the test run.
"""
import ast
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap

TRANSFORMERS = ("/work/.mirror/zucchini-nlp+transformers/repo", "decba1d2")


def git_show(repo, commit, path):
    """The text of PATH at COMMIT of the bare repository REPO."""
    return subprocess.run(
        ["git", "-C", repo, "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def full_commit(repo, commit):
    return subprocess.run(
        ["git", "-C", repo, "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()


def _segment(lines, node):
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return textwrap.dedent("\n".join(lines[start - 1 : node.end_lineno]))


def extract(source, names):
    """The source text of each name: a top-level function or class, or "Class.method" (returned
    as a plain function taking `self`). Raises KeyError for a name the file does not define."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = _segment(lines, node)
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    found[f"{node.name}.{sub.name}"] = _segment(lines, sub)
    missing = [n for n in names if n not in found]
    if missing:
        raise KeyError(f"not defined in the reference source: {missing}")
    return [found[n] for n in names]


def load(module_name, prelude, pieces):
    """Imports `prelude` followed by the extracted pieces as module `module_name`."""
    text = textwrap.dedent(prelude) + "\n\n" + "\n\n\n".join(pieces) + "\n"
    folder = tempfile.mkdtemp(prefix="posenc_golden_")
    path = os.path.join(folder, module_name + ".py")
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def reference(repo, commit, path, names, module_name, prelude):
    """extract() then load(): the named definitions of repo@commit:path as a module."""
    return load(module_name, prelude, extract(git_show(repo, commit, path), names))


def f32(x):
    """A tensor rounded to float32 and returned as float64 (float32-exact doubles)."""
    return x.float().double()


def to_list(x):
    return x.detach().cpu().tolist()


def write(path, payload):
    with open(path, "w") as f:
        json.dump(payload, f, separators=(",", ":"))
        f.write("\n")
