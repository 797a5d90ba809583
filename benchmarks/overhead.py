"""Tracing overhead on GPT forwards at two sizes (CPU, one thread).

Four ways of running the same forward, interleaved so that machine noise hits them alike:
untraced; under a bare recording TorchFunctionMode (appends the op to a list, the floor any
TorchFunctionMode-based tracer pays); under a *minimal* recorder that keeps only what any
tracer reporting "this op, on this line, in this module, made from those tensors" must keep
(each operand's identity through a weak reference, its shape, the user's frame and
instruction, the running module from global hooks: no probes, no names, no rules); and under
``shapetrace.trace`` with the rules evaluated. Prints the median of each and the ratios, for

- a student's size, 2 layers, C=32 H=4 T=16 B=2: per-op costs dominate (goal: <= 2.5x bare mode);
- a larger one, 4 layers, C=128 H=4 T=64 B=8: the kernels dominate (goal: <= 1.2x bare mode).

    python benchmarks/overhead.py [--repeats 30] [--parts]

The minimal recorder's ratio is the part of the goal that recording alone uses up; what is
left of the goal is printed as the time per forward that value probes, axis names and the
fifteen rules would have to fit in.

Besides the medians, the means, and the garbage collections (young, middle, full) that ran
during each way's forwards. A traced forward leaves no cyclic garbage; in steady state a few
young collections run per hundred forwards and no full one. A fresh process owes one full
collection for the objects its imports made (about 100 ms, as much as thirty student forwards),
which comes due at the first middle collection, in whichever forward allocates most: it is run
after the warm-up, before anything is measured.

``--parts``: four more ways, in the same interleaved rounds, that say where the goal is lost:
shapetrace without its rules (no axis names, no analysis), without its value probes, and
without either (the recorder, its module hooks and the training-run watch alone); and
shapetrace with every rule run afresh (the findings of a repeated run not taken from
``rules.memo``: what a forward traced for the first time costs).
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import shapetrace as st
from shapetrace.report.trace import Trace
from shapetrace.rules import memo


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


class MinimalRecorder(TorchFunctionMode):
    """Operand identity (a weak reference per tensor, so that activations are freed as the
    forward goes), shapes, the user's frame and instruction, and the module that ran the op
    (global forward hooks): nothing else."""

    def __init__(self):
        super().__init__()
        self.records = []
        self.live = {}  # id(tensor) -> (weak reference, shape, record that made it)
        self.module = ""
        self._stack = []
        self._handles = []

    def __enter__(self):
        from torch.nn.modules import module as nn_module

        self._handles = [nn_module.register_module_forward_pre_hook(self._pre),
                         nn_module.register_module_forward_hook(self._post, always_call=True)]
        return super().__enter__()

    def __exit__(self, *exc_info):
        for handle in self._handles:
            handle.remove()
        self.live.clear()
        return super().__exit__(*exc_info)

    def _pre(self, module, args):
        self._stack.append(self.module)
        self.module = type(module).__name__

    def _post(self, module, args, output):
        self.module = self._stack.pop()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        live = self.live
        inputs = []
        for a in args:
            if isinstance(a, torch.Tensor):
                meta = live.get(id(a))
                if meta is None or meta[0]() is not a:
                    meta = live[id(a)] = (weakref.ref(a), tuple(a.shape), None)
                inputs.append(meta)
        frame = sys._getframe(1)
        rec = (func, inputs, (frame.f_code, frame.f_lasti), self.module)
        result = func(*args, **(kwargs or {}))
        if type(result) is torch.Tensor:
            live[id(result)] = (weakref.ref(result), tuple(result.shape), rec)
        self.records.append(rec)
        return result


SIZES = [
    # (label, model arguments, batch, goal for shapetrace / bare mode)
    ("2-layer GPT, C=32 H=4 T=16 B=2", dict(n_embd=32, n_head=4, n_layer=2, block_size=16), 2, 2.5),
    ("4-layer GPT, C=128 H=4 T=64 B=8", dict(n_embd=128, n_head=4, n_layer=4, block_size=64), 8, 1.2),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--parts", action="store_true",
                        help="also shapetrace without rules, without probes, without either")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for label, kwargs, batch, goal in SIZES:
        measure(label, kwargs, batch, goal, args.repeats, args.parts)


def measure(title, kwargs, batch, goal, repeats, parts=False):
    torch.manual_seed(0)
    model = GPT(**kwargs).eval()
    idx = torch.randint(0, 65, (batch, kwargs["block_size"]))

    def untraced():
        with torch.no_grad():
            model(idx)

    def bare():
        with torch.no_grad(), BareMode():
            model(idx)

    def minimal():
        with torch.no_grad(), MinimalRecorder():
            model(idx)

    def traced():
        with torch.no_grad(), st.trace(model) as t:
            model(idx)
        t.diagnostics  # rules evaluated

    def part(**options):
        def run():
            with torch.no_grad(), Trace(model, **options) as t:
                model(idx)
            t.diagnostics
        return run

    def afresh():
        memo._FOUND.clear()  # no findings kept: every rule runs
        traced()

    runs = {"untraced": untraced, "bare mode": bare, "minimal": minimal, "shapetrace": traced}
    if parts:
        runs.update({"no rules": part(rules=False), "no probes": part(probes=False),
                     "neither": part(rules=False, probes=False), "rules afresh": afresh})
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    collections = {name: [0, 0, 0] for name in runs}  # by generation
    running = [None]

    def collected(phase, info):
        if phase == "start" and running[0] is not None:
            collections[running[0]][info["generation"]] += 1

    for fn in runs.values():  # warm up
        fn()
    gc.collect()  # the full collection the imports owe (see the module's docstring)
    gc.callbacks.append(collected)
    try:
        for _ in range(repeats):
            for name, fn in runs.items():
                running[0] = name
                start, start_cpu = time.perf_counter(), time.thread_time()
                fn()
                cpu[name].append(time.thread_time() - start_cpu)
                wall[name].append(time.perf_counter() - start)
                running[0] = None
    finally:
        gc.callbacks.remove(collected)
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
    med = {name: statistics.median(ts) for name, ts in cpu.items()}
    left = goal * med["bare mode"] - med["minimal"]
    print(f"  cpu: minimal recorder / bare mode {med['minimal'] / med['bare mode']:.2f}x: "
          f"the goal leaves {left * 1e3:.3f} ms ({left / len(t.records) * 1e6:.1f} us per op) "
          f"for value probes, axis names and rules (shapetrace spends "
          f"{(med['shapetrace'] - med['minimal']) * 1e3:.3f} ms on them and on its fuller record)")
    # On a shared machine the speed drifts between rounds; the ratio within each round does not.
    ratios = sorted(s / b for s, b in zip(cpu["shapetrace"], cpu["bare mode"]))
    quartile = len(ratios) // 4
    print(f"  cpu, round by round: shapetrace / bare mode {statistics.median(ratios):.2f}x "
          f"(middle half {ratios[quartile]:.2f}x to {ratios[-1 - quartile]:.2f}x)")
    # Other processes only ever add time: the fastest run of each is the least disturbed.
    print(f"  cpu, fastest run of each: shapetrace / bare mode "
          f"{min(cpu['shapetrace']) / min(cpu['bare mode']):.2f}x")
    mean = {name: statistics.mean(ts) for name, ts in cpu.items()}
    print(f"  cpu, means: untraced {mean['untraced'] * 1e3:.2f} ms   bare mode "
          f"{mean['bare mode'] * 1e3:.2f} ms   shapetrace {mean['shapetrace'] * 1e3:.2f} ms: "
          f"shapetrace / bare mode {mean['shapetrace'] / mean['bare mode']:.2f}x; garbage "
          f"collections (young, middle, full) during shapetrace's runs "
          f"{tuple(collections['shapetrace'])}, the bare mode's {tuple(collections['bare mode'])}")
    if parts:
        print("  cpu, parts, over the bare mode: " + "   ".join(
            f"{name} {med[name] / med['bare mode']:.2f}x" for name in
            ("shapetrace", "rules afresh", "no rules", "no probes", "neither", "minimal"))
            + "; the rules (with axis names and the analysis) cost "
            f"{(med['shapetrace'] - med['no rules']) * 1e3:.3f} ms ("
            f"{(med['rules afresh'] - med['no rules']) * 1e3:.3f} ms with none of their "
            f"findings kept from an earlier run), the value probes "
            f"{(med['shapetrace'] - med['no probes']) * 1e3:.3f} ms; the recorder alone is "
            f"{(med['neither'] - med['minimal']) * 1e3:.3f} ms over the minimal recorder")


if __name__ == "__main__":
    main()
