"""Rendering a long trace: a training loop of ~100k ops, recorded and then printed as text.

A small GPT-style model (2 blocks, C=64, H=4, T=16, B=4) trains for enough steps under
``shapetrace.trace()`` to record about ``--ops`` ops (forward, backward hooks, AdamW). The run
measures, on this thread's CPU clock:

- record: the training loop under ``shapetrace.trace`` (the ``with`` block);
- analyse: naming every axis and running the trace rules (``t.diagnostics``), which the first
  render would otherwise pay;
- render: the trace exported as plain text at 100 columns by the ``text`` exporter, as
  ``python -m shapetrace train.py > log.txt`` does.

and prints the ratio render / record. Goal: <= 1.0.

    python benchmarks/render_long.py [--ops 100000] [--no-fold]
"""

from __future__ import annotations

import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st
from shapetrace._render import EXPORTERS, trace_renderable


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.fc2 = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=32, n_embd=64, n_head=4, n_layer=2, block_size=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


def train(model, optimizer, steps, data):
    for step in range(steps):
        idx, targets = data[step % len(data)]
        loss = model(idx, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000, help="ops to record (about)")
    parser.add_argument("--no-fold", action="store_true", help="render every op, no folding")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyGPT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = [(torch.randint(0, 32, (4, 16)), torch.randint(0, 32, (4, 16))) for _ in range(8)]

    train(model, optimizer, 1, data)  # the optimizer's state exists from here on
    with st.trace(model) as probe:  # one step, to size the loop
        train(model, optimizer, 1, data)
    steps = max(1, round(args.ops / max(len(probe.records), 1)))

    start = time.thread_time()
    with st.trace(model) as t:
        train(model, optimizer, steps, data)
    record = time.thread_time() - start

    start = time.thread_time()
    t.diagnostics
    analyse = time.thread_time() - start

    start = time.thread_time()
    text = EXPORTERS["text"].paint(trace_renderable(t, width=100, fold=not args.no_fold))
    render = time.thread_time() - start

    n = len(t.records)
    print(f"training loop: {steps} steps of TinyGPT + AdamW, {n} ops recorded, "
          f"{len(text.splitlines())} lines of text{' (no folding)' if args.no_fold else ''}")
    print(f"  record  {record:8.2f} s  ({record / n * 1e6:6.1f} us/op)")
    print(f"  analyse {analyse:8.2f} s  ({analyse / n * 1e6:6.1f} us/op)  axes and rules")
    print(f"  render  {render:8.2f} s  ({render / n * 1e6:6.1f} us/op)  plain text, 100 columns")
    print(f"  render / record {render / record:.2f}x  (goal: <= 1.00x)")


if __name__ == "__main__":
    main()
