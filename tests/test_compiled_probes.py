"""Value probes stay out of ``torch.compile`` regions: a probe reading a value (``.item()``)
inside one would break the user's compiled graph (and dynamo would warn about shapetrace's code)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

import shapetrace as st
import shapetrace.record.probes as probes

REPO = str(Path(__file__).resolve().parents[1])


def attention(q, k, v):
    w = (q @ k.transpose(-2, -1) / 4.0).softmax(-1)
    return w @ v


def nan_maker(x):
    return torch.log(x - 10.0)  # log of a negative number: NaN from finite inputs


def test_probes_run_outside_compiled_regions():
    x = torch.rand(2, 3)
    with st.trace() as t:
        nan_maker(x)
    (log,) = [r for r in t.records if "log" in r.op]
    assert log.non_finite is not None


def test_probes_skip_inside_compiled_regions(monkeypatch):
    """Stand-in for a dynamo trace: with torch.compiler.is_compiling() true the probes leave the record
    alone, though the op made a NaN."""
    monkeypatch.setattr(probes, "_is_compiling", lambda: True)
    x = torch.rand(2, 3)
    with st.trace() as t:
        nan_maker(x)
    (log,) = [r for r in t.records if "log" in r.op]
    assert log.non_finite is None


SCRIPT = """
import torch, shapetrace as st

def attention(q, k, v):
    w = (q @ k.transpose(-2, -1) / 4.0).softmax(-1)
    w = w.masked_fill(w < 0, 0.0)
    return w @ v

q = torch.randn(2, 3, 4, 4)
with st.trace() as t:
    y = torch.compile(attention, backend="eager")(q, q, q)
assert torch.equal(y, attention(q, q, q))
print(sorted({r.op for r in t.records}))
"""


def test_compiled_function_under_trace_has_no_graph_break_from_probes(tmp_path):
    """Dynamo traces into the trace's mode; the probes' ``.item()`` would be a graph break that
    dynamo reports, naming ``_probes.py``."""
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Tensor.softmax" in proc.stdout
    assert "_probes.py" not in proc.stderr
    assert "Tensor.item()" not in proc.stderr


class _CompiledEmbedding(torch.nn.Module):
    """A forward decorated with ``@torch.compile()`` (a method, not a wrapped module): a
    timestep's sinusoidal embedding, made in float32 and cast to the weights' dtype."""

    def __init__(self, dim):
        super().__init__()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(16, dim), torch.nn.SiLU(),
                                       torch.nn.Linear(dim, dim))
        self.freqs = torch.exp(-torch.arange(8, dtype=torch.float32) / 8)

    @torch.compile()
    def forward(self, t):
        args = t[:, None].float() * self.freqs[None]
        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
        return self.mlp(emb.to(next(self.parameters()).dtype))


def test_a_forward_compiled_by_decorator_is_checked_as_its_python():
    """Under a check, torch.compile directives are ignored: the ops are traced where the code
    writes them, and the behaviour checks' runs compute alike (never a compiled run against an
    eager fallback: two runs that differ read as a module random in eval)."""
    from torch._dynamo.utils import counters

    compiled = counters["stats"]["unique_graphs"]
    result = st.check(_CompiledEmbedding, init={"dim": "C"}, inputs=["t=B"]).targets[0]
    assert counters["stats"]["unique_graphs"] == compiled  # nothing was compiled
    assert result.error is None, result.error
    assert any(r.op == "torch.cos" for r in result.trace.records)
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert "nondeterministic-eval" in result.checks["ran"]
