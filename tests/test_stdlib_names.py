"""A user's file named like a module of Python's own (``copy.py``, ``tokenize.py``), run from
its own folder with ``python -m shapetrace``: Python's modules are shapetrace's, the file is the
target, and it is checked like any other."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_MODULE = """import torch.nn as nn


class Tiny(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.fc = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.fc(x)
"""


@pytest.mark.parametrize("name", ["copy", "tokenize", "dataclasses"])
def test_a_file_named_like_a_module_of_python_s_own_is_checked(tmp_path, name):
    (tmp_path / f"{name}.py").write_text(_MODULE)
    (tmp_path / "json.py").write_text(_MODULE)  # a neighbour named like one too
    out = subprocess.run([sys.executable, "-m", "shapetrace", f"{name}.py", "--format", "json",
                          "--no-trace"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    (entry,) = json.loads(out.stdout)["targets"]
    assert entry["target"] == f"{name}.py::Tiny" and entry["ok"] and entry["error"] is None, entry
