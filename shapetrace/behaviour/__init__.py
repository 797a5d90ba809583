"""Stage 5, behaviour checks: run a module again to see whether it cheats, mixes samples, or is
random.

Some bugs leave every shape right and every op plausible: a mask that is never applied, a fill
value of -1e-9, a norm over the time axis, an inverted SDPA mask, a softmax over the batch,
``nn.MultiheadAttention`` fed (B, T, C) without ``batch_first=True``, positions indexed by the
batch axis, ``F.dropout`` left on in eval. They show only in what the output depends on, so
these checks re-run a float64 copy of the module (the user's module is never touched) and ask:

- ``batch-leak``: does a sample's output depend on another sample (through a floating input, or
  an integer / boolean side input such as lengths or a padding mask), or change when the batch
  is reordered (seeded random derangements, not a roll, which commutes with some wrong maps)?
- ``causal-leak`` (when the module is meant to be causal): does output position t depend on a
  later position of the query stream? A second stream (cross-attention context) may be seen whole.
  A causal mask built the wrong way round is found at the line that built it.
- ``nondeterministic-eval``: do two runs in eval mode, same inputs, give different outputs?
- ``stateful-forward``: does a call after a first one (same inputs, or shorter ones) differ from
  the same call on the module as it was, through state the first call wrote?
- ``weight-without-effect``: is there a weight matrix the forward reads whose gradient from the
  outputs is exactly zero, and whose values can change without changing any output? Or of
  which only the diagonal, or only some heads, can?
- ``mask-ignored``: with a 0/1 ``attention_mask`` made as a tokenizer makes it, does the output
  at a real position depend on an input at a padded position, through an attention?

Layout
------
``roles``     what each input is (``InputRole``, ``infer_roles``)
``probe``     the float64 copy, dependencies via autograd, token perturbations
``runs``      float64 copies, seeds, outputs read back and compared
``state``     a module's state across calls, put back between runs
``shuffle``   seeded reorderings of the batch; integer/bool side inputs changed sample by sample
``intent``    whether the module is meant to be causal, and the note when that is unknown
``mutation``  ``input-mutated``: a watch on the traced run for writes into the arguments
``locate``    the first leaking op, on a run recorded by the tracer (``record.tracer``)
``inverted``  an inverted causal mask on the scores of the leaking softmax, read from the run
``messages``  diagnostics, hints and dependency grids (``grid_text``)
``checks``    ``run_behaviour`` / ``check_behaviour`` / ``dependencies``: the checks in order
``repeat``    ``stateful-forward``: a second call on the state the first one left
``reach``     ``weight-without-effect``: gradients of the weights, and where a value path ends
``parts``     ``weight-without-effect`` for parts of a weight: only its diagonal, only some heads
``ordering``  ``positions-ignored``: positions made into tables whose order never moves the output
``residual``  ``residual-missing``: a block whose input no longer reaches its output, sublayer outputs zeroed
``masks``     ``mask-ignored``: padded positions that still reach real ones
``constant``  ``input-ignored``: an output made from the inputs that no input moves
``errors``    the module's failures vs the checks' own (``InternalCheckError``)
``results``   ``Dependency``, ``DependencyResult``, ``BehaviourResult``, ``looks_causal``

Public API
----------
``InputRole(name="x", batch=0, time=1, stream="query", tokens=False)``
    What each positional input is: its batch axis, its time axis (or None), whether it is the
    query stream (time-aligned with the output) or a ``"context"`` stream (axis S, not
    time-aligned), and whether it holds integer tokens. ``InputRole.from_axes("x", "B T C")``
    builds one from dimension names; ``infer_roles(inputs, dims)`` guesses all of them by size.

``dependencies(module, inputs, roles=None, *, dims=None, kwargs=None, rtol=RTOL, batched=None)``
    Returns a ``DependencyResult``: which output (sample, position) depends on which input
    (sample, position). One autograd forward in float64, eval mode, then B + T
    vector-Jacobian products. Token inputs are followed from the outputs of the
    ``nn.Embedding`` modules that read them (position tables indexed by ``arange`` are not
    inputs), else by changing one token at a time. Every floating tensor output with an axis
    of size B counts (tuples, dicts and Hugging Face outputs by field name).
    ``DependencyResult.batch_grid`` (B x B) and ``.time_grid`` (T x T, query stream only) are
    boolean matrices (output row, input column); ``.reason`` says why they are missing (B
    equal to T, no output with a batch axis).

``looks_causal(dep) -> bool``
    True when no output position depends on a later input position and some depends on an
    earlier one: the module is causal in practice.

``run_behaviour(module, inputs, roles=None, *, causal, dims=None, kwargs=None) -> BehaviourResult``
    All three checks: ``.diagnostics``, ``.dependency``, ``.notes`` (e.g. "causal in practice")
    and ``.skipped`` (why a check could not run). ``check_behaviour(...)`` returns only the
    diagnostics. A module that raises while re-running gives no diagnostics (the trace reports
    the failure) and one ``skipped`` line. A failure of the checks themselves (an exception
    raised from shapetrace's own code) raises ``InternalCheckError``, naming the check.

``grid_text(data) -> str``
    The dependency grid of a diagnostic's ``data`` as plain text (``■`` used, ``·`` unused,
    ``✗`` leak), for terminal renderers.

Diagnostic data
---------------
``causal-leak`` and ``batch-leak`` carry ``data["grid"]``::

    {"rows": ["0", "1", ...], "cols": [...], "row_axis": "output position (T)",
     "col_axis": "input position (T)", "expected": "lower" | "diagonal",
     "cells": [[0 | 1 | 2, ...], ...]}     # 0 unused, 1 used and allowed, 2 used but forbidden

plus ``data["leaks"]`` (how many forbidden cells are used), ``data["grid_text"]`` (the grid
as ``grid_text`` draws it, where a cell leaks) and, for ``batch-leak``, ``data["kind"]``:
``"mixing"`` (another sample is read) or ``"position"`` (the output changes with the sample's
place in the batch; then ``data["max_change"]``, the largest relative change).
``nondeterministic-eval`` carries ``data["max_change"]``, the largest absolute difference.

How a dependency is decided
---------------------------
Output elements are grouped into rows twice: by sample (B rows, for the B x B grid) and by
their latest time coordinate (T rows, for the T x T grid). Each row gets one backward pass
with a random cotangent on the row's elements, so the gradient is non-zero wherever any
element of the row depends on an input element (a cancellation has probability zero). That is
B + T backward passes, batched with vmap when autograd's batching is already loaded.
Gradients are summed in absolute value over the other input axes. A dependency counts when it
exceeds ``RTOL`` times the largest one for that (output, input) pair. ``RTOL = 1e-6``: in
float64, couplings that are zero in exact arithmetic come out at 1e-16 relative at most, and a
masked score contributes exactly 0 (``exp(-1e4)`` and ``exp(finfo.min)`` underflow to 0.0),
while real couplings through a softmax over O(1) scores are 1e-3 or more. A fill of -1e-9
leaves the future weights near 1/T, far above the threshold; the threshold sits at a fill
about 14 below the row's largest score.

What autograd cannot see is found by changing values: a batch mean or a sequence maximum
taken under ``torch.no_grad()`` or behind ``.detach()`` is a constant to autograd, so after the
gradients the last sample, then the last position, of each floating input is changed and an
output of another sample (or an earlier position) that moves counts as a dependency too (two
forwards per input, only for a deterministic module). Every run starts from the module's state
as copied: a cache kept across calls, a call counter or running statistics changed by one run
are put back before the next, so state is never taken for randomness; a module that keeps
per-sample state (an axis of size B) across calls is not checked for batch reordering.

Cost
----
A correct module costs eight or nine forwards (the first run and a second one, or two with its
dropout rates raised when it has any, three on reordered batches, one with gradients, two
with the last sample and the last position changed), B more
per integer or boolean side input, and B + T backward passes, on one
thread (probe-size tensors are too small to gain from more, and stall when the cores are
busy): about 40 ms of CPU time for a multi-head
attention at the default probe sizes (``benchmarks/behaviour_cost.py``). A leak adds one or
two recorded forwards and a backward per op up to the leaking one. ``torch.func.vmap`` is not
used: its first call in a process imports torch._dynamo (about 1 s).
"""

from __future__ import annotations

from .checks import check_behaviour, dependencies, run_behaviour
from .errors import InternalCheckError
from .messages import grid_text
from .results import RTOL, BehaviourResult, Dependency, DependencyResult, looks_causal
from .roles import InputRole, infer_roles

__all__ = [
    "RTOL",
    "InputRole",
    "Dependency",
    "DependencyResult",
    "BehaviourResult",
    "InternalCheckError",
    "infer_roles",
    "dependencies",
    "looks_causal",
    "run_behaviour",
    "check_behaviour",
    "grid_text",
]
