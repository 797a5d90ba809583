"""Rendering a long trace: a training loop of ~100k ops, recorded and then printed as text.

overhead.py's GPT (2 blocks, C=64, H=4, T=16, B=4) trains for enough steps under
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
import time

import torch
import torch.nn.functional as F

import shapetrace as st
from shapetrace.render import EXPORTERS, trace_renderable

from overhead import GPT


def train(model, optimizer, steps, data):
    for step in range(steps):
        idx, targets = data[step % len(data)]
        logits = model(idx)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
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
    model = GPT(vocab=32, n_embd=64, n_head=4, n_layer=2, block_size=16)
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
    print(f"training loop: {steps} steps of a GPT + AdamW, {n} ops recorded, "
          f"{len(text.splitlines())} lines of text{' (no folding)' if args.no_fold else ''}")
    print(f"  record  {record:8.2f} s  ({record / n * 1e6:6.1f} us/op)")
    print(f"  analyse {analyse:8.2f} s  ({analyse / n * 1e6:6.1f} us/op)  axes and rules")
    print(f"  render  {render:8.2f} s  ({render / n * 1e6:6.1f} us/op)  plain text, 100 columns")
    print(f"  render / record {render / record:.2f}x  (goal: <= 1.00x)")


if __name__ == "__main__":
    main()
