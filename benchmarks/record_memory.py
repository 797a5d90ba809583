"""Memory kept per recorded op: a training loop traced, the trace kept, its size measured.

A small GPT trains for a few steps under ``shapetrace.trace()`` (forward, loss, backward,
optimizer step). What the trace holds is the memory freed by dropping it, divided by the number
of records (records, tensor metadata, arguments; not the model's tensors, nor the modules
imported on the way): measured right after the block, and again once the axes are named (as
``t.diagnostics`` or ``t.print()`` name them). Goal: <= 500 bytes a record.

    python benchmarks/record_memory.py [--steps 20]
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc

import torch
import torch.nn.functional as F

import shapetrace as st

from overhead import GPT


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = GPT(n_embd=32, n_head=4, n_layer=2, block_size=16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 65, (2, 16))
    step(model, opt, idx)  # optimizer state exists before measuring

    tracemalloc.start()
    recorded, n = held(model, opt, idx, args.steps, name_axes=False)
    named, _ = held(model, opt, idx, args.steps, name_axes=True)
    tracemalloc.stop()
    print(f"{args.steps} training steps of a 2-layer GPT (C=32, T=16, B=2): {n} records")
    print(f"  recorded: {recorded / n:.0f} bytes a record   with named axes: {named / n:.0f} "
          f"bytes a record   (goal: <= 500)")


def held(model, opt, idx, steps, *, name_axes):
    """Bytes held by a trace of ``steps`` training steps, and its number of records."""
    with st.trace(model) as t:
        for _ in range(steps):
            step(model, opt, idx)
    if name_axes:
        t.shape_of(t.records[-1].outputs[0])
    gc.collect()
    with_trace = tracemalloc.get_traced_memory()[0]
    n = len(t.records)
    del t
    gc.collect()
    return with_trace - tracemalloc.get_traced_memory()[0], n


def step(model, opt, idx):
    logits = model(idx)
    loss = F.cross_entropy(logits.flatten(0, 1), idx.flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()


if __name__ == "__main__":
    main()
