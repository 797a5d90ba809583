"""Tracing overhead on GPT forwards at two sizes (CPU, one thread).

Three ways of running the same forward, interleaved so that machine noise hits them alike:
untraced; under a bare recording TorchFunctionMode (appends the op to a list, the floor any
TorchFunctionMode-based tracer pays); and under ``shapetrace.trace`` with the rules evaluated.
Prints the median of each and the ratios, for

- a student's size, 2 layers, C=32 H=4 T=16 B=2: per-op costs dominate (goal: <= 1.5x bare mode);
- a larger one, 4 layers, C=128 H=4 T=64 B=8: the kernels dominate (goal: <= 1.2x bare mode).

    python benchmarks/overhead.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import shapetrace as st


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.fc2 = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=65, n_embd=128, n_head=4, n_layer=4, block_size=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab)

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class BareMode(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


SIZES = [
    # (label, model arguments, batch, goal for shapetrace / bare mode)
    ("2-layer GPT, C=32 H=4 T=16 B=2", dict(n_embd=32, n_head=4, n_layer=2, block_size=16), 2, 1.5),
    ("4-layer GPT, C=128 H=4 T=64 B=8", dict(n_embd=128, n_head=4, n_layer=4, block_size=64), 8, 1.2),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for label, kwargs, batch, goal in SIZES:
        measure(label, kwargs, batch, goal, args.repeats)


def measure(title, kwargs, batch, goal, repeats):
    torch.manual_seed(0)
    model = GPT(**kwargs).eval()
    idx = torch.randint(0, 65, (batch, kwargs["block_size"]))

    def untraced():
        with torch.no_grad():
            model(idx)

    def bare():
        with torch.no_grad(), BareMode():
            model(idx)

    def traced():
        with torch.no_grad(), st.trace(model) as t:
            model(idx)
        t.diagnostics  # rules evaluated

    runs = {"untraced": untraced, "bare mode": bare, "shapetrace": traced}
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    for fn in runs.values():  # warm up
        fn()
    for _ in range(repeats):
        for name, fn in runs.items():
            start, start_cpu = time.perf_counter(), time.thread_time()
            fn()
            cpu[name].append(time.thread_time() - start_cpu)
            wall[name].append(time.perf_counter() - start)
    with torch.no_grad(), st.trace(model) as t:
        model(idx)
    print(f"{title} forward, one thread, {repeats} interleaved runs, {len(t.records)} ops traced")
    # CPU time of this thread is what the tracer adds; wall time also counts other processes.
    for label, times in (("cpu", cpu), ("wall", wall)):
        med = {name: statistics.median(ts) for name, ts in times.items()}
        print(f"  {label}: " + "   ".join(f"{name} {m * 1e3:.2f} ms" for name, m in med.items()))
        print(f"    bare mode / untraced {med['bare mode'] / med['untraced']:.2f}x   "
              f"shapetrace / untraced {med['shapetrace'] / med['untraced']:.2f}x   "
              f"shapetrace / bare mode {med['shapetrace'] / med['bare mode']:.2f}x"
              + (f"   (goal: <= {goal:.2f}x)" if label == "cpu" else ""))
    # On a shared machine the speed drifts between rounds; the ratio within each round does not.
    ratios = sorted(s / b for s, b in zip(cpu["shapetrace"], cpu["bare mode"]))
    quartile = len(ratios) // 4
    print(f"  cpu, round by round: shapetrace / bare mode {statistics.median(ratios):.2f}x "
          f"(middle half {ratios[quartile]:.2f}x to {ratios[-1 - quartile]:.2f}x)")
    # Other processes only ever add time: the fastest run of each is the least disturbed.
    print(f"  cpu, fastest run of each: shapetrace / bare mode "
          f"{min(cpu['shapetrace']) / min(cpu['bare mode']):.2f}x")


if __name__ == "__main__":
    main()
