"""Where shapetrace's overhead goes on the overhead.py model: recording, naming axes, each rule.

CPU time of this thread per forward, median of interleaved repeats:

- bare mode: the forward under a TorchFunctionMode that only records the function;
- recording: the forward under ``shapetrace.trace`` (no analysis), minus the bare mode; it
  includes the trace's making, entering and leaving and the value probes (each listed again on
  its own: the probes are everything they do after an op, and of that the weight sums of
  products after a softmax) and any garbage collection that the records' allocations set off;
- analyse: ``_analysis.analyse`` (provenance: naming every axis; the rest of the analysis is
  built on first use);
- one line per trace rule, run in registry order on one analysis, as ``t.diagnostics`` runs
  them (the first rule also builds the index of records by op, the first attention rule the
  consumer graph and the attentions they share);
- free: dropping the trace.

    python benchmarks/profile_trace.py [--repeats 40] [--small]

``--small``: the student size of overhead.py (2 layers, C=32, T=16, B=2), where per-op costs
dominate; by default the larger one (4 layers, C=128, T=64, B=8).

``--stages``: instead, the recorder's hot path in stages, measured where it runs (between the
forward's kernels, whose runs leave the caches cold: the same Python costs two to three times
what it does in a loop of its own). The forward is recorded (no rules) with the hot path cut
short after each stage in turn: the function looked up, the arguments read, the keyword
arguments read, the user's line found, the record made, the op run and its outputs described;
what is left is the probes and the observer. Each stage's cost is the difference to the cut before it; the
first line is all that is not the hot path (the trace entered and left, the module hooks).

``--hooks``: instead, what the module hooks cost where they run: the forward recorded (no rules)
with no module hooks at all (the records then name no module), with hooks whose bodies do
nothing (torch's module call taking its path for global hooks), and as shapetrace hooks it,
each per forward and per module call.

``--calls``: instead, ways a tracer could know each module call, measured on the forward alone
(no trace), each keeping the stack of running modules a tracer keeps, per forward and per module
call over the plain forward: global module hooks (what a trace registers; any global hook sends
every module call of the process down torch's hooked path), hooks on each of the model's
modules, a wrapper of ``nn.Module.__call__`` set and put back around each forward (each write
of a class attribute empties CPython's caches of every ``nn.Module`` subclass's attributes, which
the forward then fills again), the same wrapper left in place (measured after the others, against
their plain forwards: every module call of the process pays it, traced or not), and a wrapper of ``_call_impl`` set on each of the model's modules (an
instance attribute: modules outside the model, a loss, one made in forward, go unseen).
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import textwrap
import time

import torch

import shapetrace as st
from shapetrace.analysis.facts import analyse
from shapetrace.record import tracer
from shapetrace.record.probes import ValueProbes
from shapetrace.rules import trace_checks

from overhead import GPT, BareMode


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--small", action="store_true", help="the student size")
    parser.add_argument("--stages", action="store_true", help="the hot path, stage by stage")
    parser.add_argument("--hooks", action="store_true", help="the module hooks' cost")
    parser.add_argument("--calls", action="store_true",
                        help="ways of knowing each module call, on the untraced forward")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.small:
        model = GPT(n_embd=32, n_head=4, n_layer=2, block_size=16).eval()
        idx = torch.randint(0, 65, (2, 16))
    else:
        model = GPT().eval()
        idx = torch.randint(0, 65, (8, 64))
    if args.stages:
        stages(model, idx, args.repeats)
        return
    if args.hooks:
        hooks(model, idx, args.repeats)
        return
    if args.calls:
        calls(model, idx, args.repeats)
        return
    checks = trace_checks()
    times: dict[str, list[float]] = {}
    probes = {"after": 0.0, "_weights": 0.0}  # all the probes after an op; the weight sums

    def timed(name, fn):
        start = time.thread_time()
        result = fn()
        times.setdefault(name, []).append(time.thread_time() - start)
        return result

    def timed_probe(name):
        probe = getattr(ValueProbes, name)

        def wrapper(*a, **k):
            start = time.thread_time()
            try:
                return probe(*a, **k)
            finally:
                probes[name] += time.thread_time() - start

        setattr(ValueProbes, name, wrapper)

    for name in probes:
        timed_probe(name)

    def bare():
        with torch.no_grad(), BareMode():
            model(idx)

    fixed = [0.0]  # the trace made, entered and left: the recording's cost per block, not per op

    def record():
        with torch.no_grad():
            start = time.thread_time()
            t = st.trace(model, rules=False)
            t.__enter__()
            fixed[0] = time.thread_time() - start
            try:
                model(idx)
            finally:
                start = time.thread_time()
                t.__exit__(None, None, None)
                fixed[0] += time.thread_time() - start
        return t

    for _ in range(3):  # warm up
        bare()
        record().diagnostics
    times.clear()
    for _ in range(args.repeats):
        timed("bare mode", bare)
        probes.update(dict.fromkeys(probes, 0.0))
        t = timed("recording", record)
        times.setdefault("  entering and leaving", []).append(fixed[0])
        for name, spent in probes.items():
            label = "  probes after ops" if name == "after" else "    of which weight sums"
            times.setdefault(label, []).append(spent)
        analysis = timed("analyse", lambda: analyse(t))
        for name, check in checks.items():
            timed(name, lambda: list(check(analysis)))
        held = [t, analysis]
        del t, analysis
        timed("free", held.clear)
    med = {name: statistics.median(ts) * 1e3 for name, ts in times.items()}
    med["recording"] -= med["bare mode"]
    n_ops = len(record().records)
    print(f"per forward ({n_ops} ops), CPU ms, median of {args.repeats}:")
    for name, ms in med.items():
        extra = f"  ({ms / n_ops * 1e3:.1f} us per op)" if name in ("recording", "analyse") else ""
        print(f"  {name:24s} {ms:7.3f}{extra}")
    total = sum(ms for name, ms in med.items() if name != "bare mode" and not name.startswith(" "))
    print(f"  {'overhead in all':24s} {total:7.3f}  ({total / med['bare mode']:.2f} of the bare mode)")


#: (stage, the first line of the hot path after it): the hot path returns just before that line
STAGES = [
    ("the function looked up", "if kind & REBOUND:"),
    ("the arguments read", "if kwargs:"),
    ("the keyword arguments read", "site = site_from(self._getframe(1), code)"),
    ("the user's line found", "records = self.records"),
    ("the record made", "previous, self.current = self.current, rec"),
    ("the op run, its outputs described", "probes = self.probes"),
]


def stages(model, idx, repeats: int) -> None:
    """``--stages``: see the module's docstring."""
    source = textwrap.dedent(inspect.getsource(tracer._Mode.__torch_function__)).splitlines()
    full = tracer._Mode.__torch_function__
    runs = {"bare mode": None}
    for label, line in STAGES:
        at = [i for i, text in enumerate(source) if text.strip() == line]
        if not at:
            print(f"  (no line {line!r} in the hot path: the stage '{label}' is left out)")
            continue
        result = "result" if line.startswith("probes") else "func(*args, **kwargs)"
        indent = source[at[0]][:len(source[at[0]]) - len(source[at[0]].lstrip())]
        cut = source[:at[0]] + [f"{indent}return {result}"] + source[at[0]:]
        namespace: dict = {}
        exec(compile("\n".join(cut), tracer.__file__, "exec"), vars(tracer), namespace)
        runs[label] = namespace["__torch_function__"]
    runs["the probes and the rest"] = full

    def run(function) -> float:
        with torch.no_grad():
            if function is None:
                start = time.thread_time()
                with BareMode():
                    model(idx)
                return time.thread_time() - start
            tracer._Mode.__torch_function__ = function
            try:
                return _traced_forward(model, idx)
            finally:
                tracer._Mode.__torch_function__ = full

    times = _in_turn(runs, run, repeats)
    n_ops = _ops(model, idx)
    print(f"per forward ({n_ops} ops), entered, run and left, CPU ms, median of {repeats}:")
    _steps(times, n_ops, "op", 52,
           lambda before, name: name if before != "bare mode" else "entering and leaving, module hooks, " + name)


def hooks(model, idx, repeats: int) -> None:
    """``--hooks``: see the module's docstring."""
    recorder = tracer.Recorder
    full = (recorder._hook_modules, recorder._pre_hook, recorder._post_hook)

    def idle_pre(self, module, args):
        return None

    def idle_post(self, module, args, output):
        return None

    ways = {"no module hooks": (lambda self: None, full[1], full[2]),
            "hooks that do nothing": (full[0], idle_pre, idle_post),
            "shapetrace's hooks": full}

    def run(way) -> float:
        recorder._hook_modules, recorder._pre_hook, recorder._post_hook = way
        try:
            with torch.no_grad():
                return _traced_forward(model, idx)
        finally:
            recorder._hook_modules, recorder._pre_hook, recorder._post_hook = full

    times = _in_turn(ways, run, 3 * repeats)  # three times the repeats: the differences are small
    calls = _module_calls(model, idx)
    print(f"per forward ({calls} module calls), CPU ms, median of {3 * repeats}:")
    _steps(times, calls, "call", 24)


def calls(model, idx, repeats: int) -> None:
    """``--calls``: see the module's docstring."""
    from torch.nn.modules import module as nn_module

    Module = torch.nn.Module
    original, call_impl = Module.__call__, Module._call_impl
    stack: list = []

    def pre(module, *rest):
        stack.append(module)

    def post(module, *rest):
        stack.pop()

    def wrapper(call):
        def wrapped(self, *args, **kwargs):
            stack.append(self)
            try:
                return call(self, *args, **kwargs)
            finally:
                stack.pop()
        return wrapped

    wrapped_call, wrapped_impl = wrapper(original), wrapper(call_impl)

    def forward():
        with torch.no_grad():
            model(idx)

    def global_hooks():
        handles = [nn_module.register_module_forward_pre_hook(pre),
                   nn_module.register_module_forward_hook(post, always_call=True)]
        forward()
        for handle in handles:
            handle.remove()

    def module_hooks():
        handles = []
        for module in model.modules():
            handles.append(module.register_forward_pre_hook(pre))
            handles.append(module.register_forward_hook(post, always_call=True))
        forward()
        for handle in handles:
            handle.remove()

    def class_wrapper():
        Module.__call__ = wrapped_call
        try:
            forward()
        finally:
            Module.__call__ = original

    def instance_wrappers():
        modules = list(model.modules())
        for module in modules:
            vars(module)["_call_impl"] = wrapped_impl.__get__(module)
        try:
            forward()
        finally:
            for module in modules:
                del vars(module)["_call_impl"]

    ways = {"the plain forward": forward, "global module hooks": global_hooks,
            "hooks on each module": module_hooks,
            "nn.Module.__call__ wrapped per forward": class_wrapper,
            "_call_impl wrapped on each module": instance_wrappers}
    times: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for i in range(3 * repeats + 3):
            for name, way in ways.items():
                start = time.thread_time()
                way()
                if i >= 3:
                    times[name].append(time.thread_time() - start)
        # left in place: set once, then the plain forward again (set and put back each round,
        # it would be the way above)
        Module.__call__ = wrapped_call
        for i in range(3 * repeats + 3):
            start = time.thread_time()
            forward()
            if i >= 3:
                times.setdefault("nn.Module.__call__ wrapped once, left", []).append(
                    time.thread_time() - start)
    finally:
        Module.__call__ = original
    count = _module_calls(model, idx)
    plain = statistics.median(times.pop("the plain forward")) * 1e3
    print(f"per forward ({count} module calls), CPU ms, median of {3 * repeats}:")
    print(f"  {'the plain forward':40s} {plain:7.3f}")
    for name, ts in times.items():
        spent = statistics.median(ts) * 1e3 - plain
        print(f"  {name:40s} {spent:+7.3f}  ({spent / count * 1e3:.1f} us per call)")


def _traced_forward(model, idx) -> float:
    """CPU seconds of one forward inside a trace without rules: entered, run and left."""
    t = st.trace(model, rules=False)
    start = time.thread_time()
    with t:
        model(idx)
    return time.thread_time() - start


def _in_turn(ways: dict, run, rounds: int) -> dict[str, list[float]]:
    """Seconds of ``run(way)`` for each way in turn, ``rounds`` times after three rounds that
    warm up."""
    times: dict[str, list[float]] = {name: [] for name in ways}
    for i in range(rounds + 3):
        for name, way in ways.items():
            spent = run(way)
            if i >= 3:
                times[name].append(spent)
    return times


def _steps(times: dict[str, list[float]], count: int, unit: str, width: int,
           label=lambda before, name: name) -> None:
    """The first way's median in ms, then what each next way adds to the one before it, also
    per ``unit`` (``count`` of them per forward)."""
    before = None
    for name, ts in times.items():
        ms = statistics.median(ts) * 1e3
        if before is None:
            print(f"  {name:{width}s} {ms:7.3f}")
        else:
            spent = ms - before[1]
            print(f"  {label(before[0], name):{width}s} {spent:+7.3f}  "
                  f"({spent / count * 1e3:.1f} us per {unit})")
        before = (name, ms)


def _module_calls(model, idx) -> int:
    from torch.nn.modules import module as nn_module

    calls = []
    handle = nn_module.register_module_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        with torch.no_grad():
            model(idx)
    finally:
        handle.remove()
    return len(calls)


def _ops(model, idx) -> int:
    with torch.no_grad(), st.trace(model, rules=False) as t:
        model(idx)
    return len(t.records)


if __name__ == "__main__":
    main()
