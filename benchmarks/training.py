"""A whole training run under ``shapetrace.trace``: its cost and the memory the trace keeps.

The student GPT of ``overhead.py`` (2 layers, C=32 H=4 T=16 B=2) trained with AdamW on CPU, one
thread, for ``--steps`` steps, untraced and inside ``with shapetrace.trace(model):``, in
``--rounds`` interleaved rounds so that machine noise hits both alike (each round in the
other order: the one run second pays about 2%). Prints

- the CPU time of each (median over the rounds) and their ratio (goal: <= 1.1x);
- the values shapetrace read back to the host (``.item()``, ``bool(t)``, ``.tolist()``...) in
  the steps it did not record (goal: none; on a GPU each read stalls the loop), and elsewhere
  (the recorded steps, the reads of the steps' flags every ``record.flags.EVERY`` steps, the
  end of the run);
- how much more memory (Python allocations, ``tracemalloc``) the traced run holds at its last
  step than at step 100, beyond what the untraced run's grows by (goal: <= 5 MB);
- what the trace kept: its records, its kinds of step and how many steps each counted.

    python benchmarks/training.py [--steps 1000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).parent))
from overhead import GPT  # noqa: E402

import shapetrace as st  # noqa: E402
from shapetrace.record.flags import EVERY, HostReads  # noqa: E402

SIZE = dict(n_embd=32, n_head=4, n_layer=2, block_size=16)
BATCH, VOCAB = 2, 65
GOAL_RATIO, GOAL_MB = 1.1, 5.0


def train(model, steps: int, marks: dict | None = None) -> None:
    """``steps`` AdamW steps on random tokens; ``marks``: step -> filled with the memory held
    (tracemalloc) when that step begins."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    T = SIZE["block_size"]
    for step in range(1, steps + 1):
        if marks is not None and step in marks:
            marks[step] = tracemalloc.get_traced_memory()[0]
        x = torch.randint(0, VOCAB, (BATCH, T), generator=g)
        y = torch.randint(0, VOCAB, (BATCH, T), generator=g)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def fresh_model():
    torch.manual_seed(0)
    return GPT(vocab=VOCAB, **SIZE)


def timed(fn) -> float:
    start = time.thread_time()
    fn()
    return time.thread_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    steps = args.steps
    train(fresh_model(), 20)  # warm up torch and shapetrace alike
    warm = fresh_model()
    with st.trace(warm):
        train(warm, 5)
    # the full collection a fresh process owes for its imports (about 100 ms), run now rather
    # than in the first round's first run
    gc.collect()

    plain, traced = [], []
    kept = None

    def untraced_run():
        model = fresh_model()
        plain.append(timed(lambda: train(model, steps)))

    def traced_run():
        model = fresh_model()

        def run():
            nonlocal kept
            with st.trace(model) as t:
                train(model, steps)
            kept = t

        traced.append(timed(run))

    for round_ in range(args.rounds):  # the order alternates: whichever runs second pays ~2%
        for run_one in ((untraced_run, traced_run) if round_ % 2 == 0
                        else (traced_run, untraced_run)):
            run_one()
    p, t_ = statistics.median(plain), statistics.median(traced)
    ratio = t_ / p
    mean_ratio = statistics.mean(traced) / statistics.mean(plain)
    print(f"{steps} training steps of a 2-layer GPT (C=32 H=4 T=16 B=2, AdamW), CPU, one thread, "
          f"{args.rounds} interleaved rounds")
    print(f"  cpu: untraced {p:.2f} s   traced {t_:.2f} s   traced / untraced {ratio:.2f}x"
          f"   (goal: <= {GOAL_RATIO:.1f}x; of the means {mean_ratio:.2f}x)")
    kinds = ", ".join(f"step {r.first} x {r.count}" for r in kept.steps)
    print(f"  the trace kept {len(kept.records)} records of {kept.step_count} steps: {kinds}")

    model = fresh_model()
    t = st.trace(model)
    with HostReads(t) as reads, t:
        train(model, steps)
    print(f"  values read back to the host by shapetrace: {reads.steady} in unrecorded steps "
          f"(goal: 0), {reads.other} elsewhere (recorded steps, the flags read "
          f"{t._watch.flags.reads} times, every {EVERY} steps and at the end)")

    first = min(100, steps)
    growth = {}
    for name in ("untraced", "traced"):
        marks = {first: 0, steps: 0}
        model = fresh_model()
        tracemalloc.start()
        if name == "traced":
            with st.trace(model):
                train(model, steps, marks)
        else:
            train(model, steps, marks)
        tracemalloc.stop()
        growth[name] = (marks[steps] - marks[first]) / 2**20
    extra = growth["traced"] - growth["untraced"]
    print(f"  memory from step {first} to step {steps}: untraced +{growth['untraced']:.2f} MB   "
          f"traced +{growth['traced']:.2f} MB   the trace's own +{extra:.2f} MB"
          f"   (goal: <= {GOAL_MB:.0f} MB)")


if __name__ == "__main__":
    main()
