"""Cost of the behaviour checks on a multi-head attention at probe sizes (B=5, T=7, C=143, H=11).

Times ``run_behaviour`` (a float64 eval copy, two runs for determinism, the batch-permutation
run, the dependency forward and its B + T backward passes) after torch is imported:

- the first call in the process, which also pays the lazy set-up it triggers in torch;
- the median of several warm calls, with the backward passes batched by vmap and looped;
- a buggy module (unassigned ``masked_fill``), where the leak is also located op by op.

Goal: under 1 s of work for the first call.

    python benchmarks/behaviour_cost.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from shapetrace.behaviour import dependencies, run_behaviour
from shapetrace.base.dims import Dims


class MultiHeadAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout=0.1, apply_mask=True):
        super().__init__()
        self.n_head = n_head
        self.apply_mask = apply_mask
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        if self.apply_mask:
            att = att.masked_fill(self.bias[:T, :T] == 0, float("-inf"))
        else:
            att.masked_fill(self.bias[:T, :T] == 0, float("-inf"))  # result dropped: a leak
        att = self.attn_dropout(F.softmax(att, dim=-1))
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


def _time(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of one call; CPU time is robust to other processes on the machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _median(fn, repeats: int) -> tuple[float, float]:
    runs = [_time(fn) for _ in range(repeats)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)

    dims = Dims()
    torch.manual_seed(0)
    good = MultiHeadAttention(dims["C"], dims["H"], dims["L"])
    bad = MultiHeadAttention(dims["C"], dims["H"], dims["L"], apply_mask=False)
    x = torch.randn(dims["B"], dims["T"], dims["C"])

    def check(module):
        return lambda: run_behaviour(module, [x], causal=True, dims=dims)

    cold = _time(check(good))
    rows = [
        ("first call in the process", cold),
        (f"full check, median of {args.repeats}", _median(check(good), args.repeats)),
        ("dependencies, backward looped",
         _median(lambda: dependencies(good, [x], dims=dims, batched=False), args.repeats)),
        ("dependencies, backward batched",
         _median(lambda: dependencies(good, [x], dims=dims, batched=True), args.repeats)),
        ("buggy module, leak located", _median(check(bad), max(3, args.repeats // 4))),
    ]
    assert run_behaviour(bad, [x], causal=True, dims=dims).diagnostics, "the buggy module must leak"

    sizes = ", ".join(f"{k}={dims[k]}" for k in ("B", "T", "C", "H"))
    print(f"behaviour checks, multi-head attention at {sizes} (torch {torch.__version__}, "
          f"python {sys.version.split()[0]})")
    print(f"  {'':34} {'wall':>9} {'CPU':>9}")
    for label, (wall, cpu) in rows:
        print(f"  {label:34} {wall * 1e3:6.1f} ms {cpu * 1e3:6.1f} ms")
    print(f"  goal: first call under 1000 ms -> {'met' if cold[0] < 1.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
