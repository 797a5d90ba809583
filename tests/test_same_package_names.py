"""Targets in two copies of one package (two checkouts, two versions of a course's solution):
each is imported, traced and checked as its own, in one run of the command line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

ATTEND = {
    "a": """
        def attend(q, k, v):
            w = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            return w.softmax(-1) @ v
        """,
    "b": """
        def attend(q, k, v):
            # the other copy: the scale chosen on a line of its own
            scale = q.shape[-1] ** -0.5
            w = (q @ k.transpose(-2, -1)) * scale
            return w.softmax(-1) @ v
        """,
}

MODEL = """
    import torch.nn as nn

    from .attend import attend


    class Attn(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, 3 * dim)

        def forward(self, x):
            b, t, c = x.shape
            qkv = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv
            return attend(q, k, v).transpose(1, 2).reshape(b, t, c)
    """


def test_two_copies_of_one_package_are_checked_apart(tmp_path):
    for copy in ("a", "b"):
        package = tmp_path / copy / "course"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "attend.py").write_text(textwrap.dedent(ATTEND[copy]))
        (package / "model.py").write_text(textwrap.dedent(MODEL))
    out = subprocess.run([sys.executable, "-m", "shapetrace", "a/course/model.py",
                          "b/course/model.py", "--format", "json"],
                         capture_output=True, text=True, cwd=tmp_path)
    report = json.loads(out.stdout)
    assert out.returncode == 0, out.stderr
    files = {}
    for target in report["targets"]:
        assert target["error"] is None
        files[target["target"].split("/")[0]] = {r["file"] for r in target["trace"]}
    assert files["a"] == {"a/course/model.py", "a/course/attend.py"}
    assert files["b"] == {"b/course/model.py", "b/course/attend.py"}
