"""The tracer: results unchanged, nothing left behind, no tensors kept, every op located."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import warnings
import weakref
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.nn.modules import module as nn_module

import shapetrace
from models_basic import (B, C, FILE, MHA, T, V, Block, DropoutModel, H, RaisesInForward,
                          Recorder, SDPAttention, TinyGPT, TorchMHA, ViewAfterTranspose,
                          WrongKeyTranspose, d, line_of)


def x_btc(seed: int = 1) -> torch.Tensor:
    return torch.randn(B, T, C, generator=torch.Generator().manual_seed(seed))


def idx_bt(seed: int = 1) -> torch.Tensor:
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


# --- tracing never changes results ------------------------------------------------------------

def _run(factory, make_input, *, train: bool, grad: bool, traced: bool):
    torch.manual_seed(0)
    model = factory()
    model.train(train)
    x = make_input()
    torch.manual_seed(1234)  # dropout draws from the global generator: tracing must not
    with torch.set_grad_enabled(grad):
        if traced:
            with shapetrace.trace(model) as t:
                out = model(x)
            assert len(t.records) > 0
        else:
            out = model(x)
    grads = {}
    if grad:
        out.float().square().mean().backward()
        grads = {name: p.grad for name, p in model.named_parameters()}
    return out.detach(), grads


@pytest.mark.parametrize("factory, make_input, train, grad", [
    pytest.param(TinyGPT, idx_bt, True, True, id="gpt-train-dropout-backward"),
    pytest.param(TinyGPT, idx_bt, False, True, id="gpt-eval-backward"),
    pytest.param(Block, x_btc, False, False, id="block-eval-no-grad"),
    pytest.param(DropoutModel, x_btc, False, True, id="dropout-eval"),
    pytest.param(DropoutModel, x_btc, True, True, id="dropout-train-same-rng"),
    pytest.param(SDPAttention, x_btc, True, True, id="sdpa-einops"),
    pytest.param(TorchMHA, lambda: x_btc().transpose(0, 1), True, True, id="nn-mha-seq-first"),
    pytest.param(lambda: TorchMHA(batch_first=True), x_btc, False, False,
                 id="nn-mha-batch-first-eval-no-grad"),
])
def test_tracing_leaves_outputs_and_gradients_bit_identical(factory, make_input, train, grad):
    plain_out, plain_grads = _run(factory, make_input, train=train, grad=grad, traced=False)
    traced_out, traced_grads = _run(factory, make_input, train=train, grad=grad, traced=True)
    assert torch.equal(plain_out, traced_out)
    assert plain_grads.keys() == traced_grads.keys()
    assert [name for name, g in plain_grads.items() if not torch.equal(g, traced_grads[name])] == []


def test_tracing_does_not_touch_the_random_generator():
    torch.manual_seed(7)
    with shapetrace.trace():
        torch.ones(3).relu()
    after_trace = torch.rand(4)
    torch.manual_seed(7)
    torch.ones(3).relu()
    assert torch.equal(after_trace, torch.rand(4))


# --- nothing is left behind ------------------------------------------------------------------

def _global_state():
    return {
        "torch function stack": torch._C._len_torch_function_stack(),
        "function modes": len(torch.overrides._get_current_function_mode_stack()),
        "forward hooks": len(nn_module._global_forward_hooks),
        "forward pre-hooks": len(nn_module._global_forward_pre_hooks),
        "always-called hooks": len(nn_module._global_forward_hooks_always_called),
        "showwarning": warnings.showwarning,
    }


def _raise_user_error(error):
    RaisesInForward()(x_btc())


def _raise_torch_error(error):
    torch.ones(2, 3) @ torch.ones(2, 3)


def _raise_keyboard_interrupt(error):
    torch.ones(2).relu()
    raise error


def _nested_inner_raises(error):
    with shapetrace.trace():
        torch.ones(2).relu()
        with shapetrace.trace(Block()):
            Block()(x_btc())
            raise error


def _nested_outer_raises(error):
    with shapetrace.trace():
        with shapetrace.trace():
            torch.ones(2).relu()
        torch.ones(2).exp()
    raise error


def _torch_error_message():
    try:
        torch.ones(2, 3) @ torch.ones(2, 3)
    except RuntimeError as exc:
        return str(exc)


@pytest.mark.parametrize("body, error", [
    pytest.param(_raise_user_error, RaisesInForward.error, id="user-exception-in-forward"),
    pytest.param(_raise_torch_error, None, id="torch-op-raises"),
    pytest.param(_raise_keyboard_interrupt, KeyboardInterrupt(), id="keyboard-interrupt"),
    pytest.param(_nested_inner_raises, ZeroDivisionError("inner"), id="nested-inner-raises"),
    pytest.param(_nested_outer_raises, LookupError("outer"), id="nested-outer-raises"),
])
def test_exception_propagates_unchanged_and_nothing_is_left_behind(body, error):
    before = _global_state()
    expected_type = type(error) if error is not None else RuntimeError
    with pytest.raises(expected_type) as info:
        with shapetrace.trace() as t:
            body(error)
    assert _global_state() == before
    if error is not None:
        assert info.value is error
    else:
        assert str(info.value) == _torch_error_message()
    assert info.value.__cause__ is None
    assert type(t.exception) is type(info.value) and str(t.exception) == str(info.value)
    assert t.exception.__traceback__ is None  # the trace keeps no frames
    assert len(t.records) > 0  # everything up to the failure is kept


def test_nested_traces_restore_state_level_by_level():
    before = _global_state()
    with shapetrace.trace() as outer:
        torch.ones(2).relu()
        with shapetrace.trace() as inner:
            assert torch._C._len_torch_function_stack() == before["torch function stack"] + 2
            assert _global_state()["forward hooks"] == before["forward hooks"] + 2
            torch.ones(2).exp()
        assert torch._C._len_torch_function_stack() == before["torch function stack"] + 1
        assert _global_state()["forward hooks"] == before["forward hooks"] + 1
    assert _global_state() == before
    assert [r.op for r in inner.records] == ["torch.ones", "Tensor.exp"]
    assert [r.op for r in outer.records][:2] == ["torch.ones", "Tensor.relu"]
    assert {"torch.ones", "Tensor.exp"} <= {r.op for r in outer.records[2:]}


def test_nested_traces_record_only_the_users_ops():
    with shapetrace.trace() as outer:
        torch.ones(2).relu()
        with shapetrace.trace():
            torch.ones(2).exp()
    assert [r.op for r in outer.records] == ["torch.ones", "Tensor.relu",
                                             "torch.ones", "Tensor.exp"]


def test_grad_mode_switches_are_not_ops():
    x = torch.randn(3)
    with shapetrace.trace() as t:
        with torch.no_grad():
            y = x.exp()
        y.sum()
    assert [r.op for r in t.records] == ["Tensor.exp", "Tensor.sum"]


def test_a_trace_cannot_be_entered_twice():
    t = shapetrace.trace()
    with t:
        torch.ones(1).relu()
    before = _global_state()
    with pytest.raises(RuntimeError, match="cannot be entered twice"):
        with t:
            pass
    assert _global_state() == before


def test_module_hooks_are_not_called_after_the_block():
    model = Block()
    with shapetrace.trace(model) as t:
        model(x_btc())
    n = len(t.records)
    model(x_btc())
    assert len(t.records) == n


# --- records keep no tensors ----------------------------------------------------------------

def _tensors_in(obj, depth=0):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 4 and isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors_in(item, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors_in(item, depth + 1)


def test_an_intermediate_activation_dies_after_the_block_while_the_trace_lives():
    model = Recorder()
    with shapetrace.trace(model) as t:
        out = model(x_btc())
        local = out.exp()
        local_ref = weakref.ref(local)
    del out, local
    gc.collect()
    assert model.seen[0]() is None  # the GELU output inside forward
    assert local_ref() is None  # a tensor made in the block itself
    assert t.shape_of(t.records[-1].outputs[0]) == "(B, T)"  # metadata survives


def test_records_hold_only_metadata():
    model = TinyGPT()
    with shapetrace.trace(model) as t:
        model(idx_bt())
    t.diagnostics  # analysis and rules must not keep tensors either
    for rec in t.records:
        held = [*rec.args, rec.kwargs, rec.inputs, rec.outputs, rec.weight_sums or {}]
        assert not list(_tensors_in(held)), rec
        for meta in (*rec.inputs, *rec.outputs):
            assert not isinstance(meta.ref, weakref.ref), rec
            assert not isinstance(meta.value, torch.Tensor), rec


# --- every op is located: module path, file and line -------------------------------------------

def _first(t, op: str, module: str | None = None):
    for rec in t.records:
        if rec.op == op and (module is None or rec.module == module):
            return rec
    raise AssertionError(f"no {op} in {module}: {[(r.op, r.module) for r in t.records]}")


def _traced(model, x, *, named: bool = True):
    with shapetrace.trace(model if named else None) as t:
        model(x)
    return t


@pytest.mark.parametrize("op, module, tag, source", [
    pytest.param("F.linear", "MHA.c_attn", "mha-qkv", "self.c_attn(x)", id="linear-in-submodule"),
    pytest.param("Tensor.split", "MHA", "mha-qkv", "self.c_attn(x).split(C, dim=2)", id="split"),
    pytest.param("Tensor.view", "MHA", "mha-view", "k.view(B, T, self.n_head, C // self.n_head)",
                 id="view"),
    pytest.param("Tensor.transpose", "MHA", "mha-transpose", "k.transpose(1, 2)", id="transpose"),
    pytest.param("F.softmax", "MHA", "mha-softmax", "F.softmax(att, dim=-1)", id="softmax"),
    pytest.param("F.linear", "MHA.c_proj", "mha-proj", "self.c_proj(y)", id="output-projection"),
])
def test_op_is_tagged_with_module_path_and_user_line(op, module, tag, source):
    t = _traced(MHA(), x_btc())
    rec = _first(t, op, module)
    assert Path(rec.file).resolve() == FILE
    assert rec.line == line_of(tag)
    assert rec.source == source


@pytest.mark.parametrize("model, x, named, module", [
    pytest.param(Block(), x_btc(), True, "Block.attn.c_attn", id="block-named"),
    pytest.param(Block(), x_btc(), False, "Block.attn.c_attn", id="block-without-model"),
    pytest.param(TinyGPT(), idx_bt(), True, "TinyGPT.blocks.1.attn.c_attn", id="gpt-module-list"),
])
def test_nested_module_paths(model, x, named, module):
    t = _traced(model, x, named=named)
    linears = [r for r in t.records if r.op == "F.linear" and r.module.endswith("c_attn")]
    assert linears[-1].module == module
    assert Path(linears[-1].file).resolve() == FILE


def test_library_frames_are_skipped_for_the_line():
    """F.linear runs inside nn.Linear.forward, but its line is the user's call."""
    t = _traced(MHA(), x_btc())
    rec = _first(t, "F.linear", "MHA.c_attn")
    assert rec.internal
    assert "torch" not in Path(rec.file).parts
    assert not _first(t, "Tensor.view").internal


@pytest.mark.parametrize("batch_first", [pytest.param(False, id="seq-first"),
                                         pytest.param(True, id="batch-first")])
def test_nn_multihead_attention_shows_student_level_ops(batch_first):
    model = TorchMHA(batch_first=batch_first)
    x = x_btc() if batch_first else x_btc().transpose(0, 1)
    t = _traced(model, x)
    inside = [r for r in t.records if r.module == "TorchMHA.mha"]
    ops = {r.op for r in inside}
    assert {"F.linear", "Tensor.view", "torch.bmm", "F.softmax"} <= ops
    assert not [op for op in ops if "aten" in op or op.startswith("torch.ops")]
    assert {r.line for r in inside} == {line_of("torch-mha")}
    assert {Path(r.file).resolve() for r in inside} == {FILE}
    views = [t.shape_of(r.outputs[0]) for r in inside if r.op == "Tensor.view"]
    assert "(T, B*H, d)" in views


class _SoftmaxThenMix(torch.nn.Module):
    """Self-attention written out, then torch's own: both call ``F.softmax``."""

    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(C, H, batch_first=True)

    def forward(self, x):
        att = F.softmax(x @ x.transpose(-2, -1), dim=-1)
        y = att @ x
        return self.mha(y, y, y)[0]


@pytest.mark.parametrize("before", [pytest.param(False, id="first-trace"),
                                    pytest.param(True, id="traced-unpatched-before")])
@pytest.mark.parametrize("train", [pytest.param(False, id="eval"), pytest.param(True, id="train")])
@pytest.mark.parametrize("name", ["softmax", "linear"])
def test_a_function_patched_before_the_trace_runs_once_per_call(monkeypatch, name, train,
                                                                before):
    # A user's tempered softmax (or instrumented linear), put in place after shapetrace was
    # imported: the trace runs the user's function once per call, as an untraced run does, and
    # torch's own underneath it, so the numbers are the untraced run's. The same when an
    # earlier trace ran the model before the patch (what a trace learnt of torch's functions
    # then holds no more).
    if before:
        with shapetrace.trace(_SoftmaxThenMix()) as t:
            t.model(x_btc())
    real = getattr(F, name)
    calls = []

    def patched(x, *args, **kwargs):
        calls.append(1)
        return real(x / 2.0 if name == "softmax" else x, *args, **kwargs)

    monkeypatch.setattr(F, name, patched)
    torch.manual_seed(0)
    model = _SoftmaxThenMix().train(train)
    x = x_btc()
    expected = model(x)
    untraced = len(calls)
    calls.clear()
    with shapetrace.trace(model) as t:
        out = model(x)
    assert len(calls) == untraced > 0
    assert torch.equal(out, expected)
    if name == "softmax":  # recorded as torch's op, at the patched function's line
        softmaxes = [r for r in t.records if r.op == "F.softmax"]
        assert len(softmaxes) == 2
        assert {r.line for r in softmaxes} == {patched.__code__.co_firstlineno + 2}


def test_a_patched_softmax_runs_once_while_recording_is_paused(monkeypatch):
    # inside torch.jit.trace the trace records nothing, and still runs each call as given
    real = F.softmax
    calls = []

    def patched(x, *args, **kwargs):
        calls.append(1)
        return real(x / 2.0, *args, **kwargs)

    class Scores(torch.nn.Module):
        def forward(self, x):
            return F.softmax(x, dim=-1) * 2

    monkeypatch.setattr(F, "softmax", patched)
    model = Scores()
    x = x_btc()
    expected = model(x)
    with shapetrace.trace(model):
        out = torch.jit.trace(model, (x,), check_trace=False)(x)
    assert len(calls) == 2
    assert torch.allclose(out, expected)


# --- warnings are attached to the op that raised them --------------------------------------------

def test_warning_is_attached_to_its_op_and_still_reaches_the_user():
    x = torch.randn(B, T)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # softmax's implicit-dim warning is a Python warning
        with shapetrace.trace() as t:
            y = x.exp()
            F.softmax(y)
            y.sum()
    softmax = _first(t, "F.softmax")
    assert len(softmax.warnings) == 1
    assert "Implicit dimension choice for softmax" in softmax.warnings[0]
    assert softmax.warnings[0].startswith("UserWarning: ")
    assert [list(r.warnings) for r in t.records if r is not softmax] == [[], []]
    assert any("Implicit dimension choice" in str(w.message) for w in caught)


def test_warning_still_points_at_the_users_line():
    x = torch.randn(B, T)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with shapetrace.trace():
            F.softmax(x)
    [warning] = [w for w in caught if "Implicit dimension choice" in str(w.message)]
    assert Path(warning.filename).resolve() == Path(__file__).resolve()


def test_transpose_T_deprecation_warning_is_attached(tmp_path):
    """torch warns about ``.T`` on a 3-D tensor once per process (TORCH_WARN_ONCE, which no
    warnings filter resets), so this runs in a fresh interpreter where it is the first ``.T``."""
    script = textwrap.dedent("""
        import json, warnings, torch, shapetrace
        warnings.simplefilter("always")
        x = torch.randn(5, 7, 13)
        with shapetrace.trace() as t:
            k = x.exp()
            kt = k.T
        print(json.dumps([[r.op, r.warnings, t.shape_of(r.outputs[0])] for r in t.records]))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [(op, shape) for op, _, shape in records] == [("Tensor.exp", "(B, T, d)"),
                                                          ("Tensor.T", "(d, T, B)")]
    assert records[0][1] == []
    assert len(records[1][1]) == 1 and "x.T" in records[1][1][0]
    assert "deprecated" in records[1][1][0]


# --- when an op raises -----------------------------------------------------------------------

FAILURES = [
    pytest.param(WrongKeyTranspose, (B, T, C), "op-failed", "wrong-key-transpose", "Tensor.matmul",
                 ["q is (B, H, T, d)", "k.transpose(1, 2) is (B, T, H, d)"],
                 ["transpose the last two axes", "k.transpose(-2, -1)"], id="wrong-key-transpose"),
    pytest.param(ViewAfterTranspose, (B, H, T, d), "noncontiguous-view", "noncontiguous-view",
                 "Tensor.view",
                 ["y (B, T, H, d) is not contiguous",
                  f"transpose at line {line_of('made-noncontiguous')}", "y.transpose(1, 2)"],
                 [".reshape(", ".contiguous()"], id="view-after-transpose"),
]


@pytest.mark.parametrize("cls, shape, rule, tag, op, message, hint", FAILURES)
def test_failing_op_is_explained_and_the_error_still_raised(cls, shape, rule, tag, op, message,
                                                            hint):
    model = cls()
    x = torch.randn(*shape)
    with pytest.raises(RuntimeError) as plain:
        model(x)
    with pytest.raises(RuntimeError) as traced:
        with shapetrace.trace(model) as t:
            model(x)
    assert str(traced.value) == str(plain.value)
    failed = t.records[-1]
    assert (failed.op, failed.line, list(failed.outputs)) == (op, line_of(tag), [])
    assert failed.error == ("RuntimeError", str(plain.value))
    assert all(r.error is None and r.outputs for r in t.records[:-1])
    found = [dg for dg in t.diagnostics if dg.severity == "error"]
    assert [(dg.rule, dg.line, dg.op, dg.module) for dg in found] == \
        [(rule, line_of(tag), op, cls.__name__)]
    dg = found[0]
    assert Path(dg.file).resolve() == FILE
    assert [fragment for fragment in message if fragment not in dg.message] == [], dg.message
    assert [fragment for fragment in hint if fragment.lower() not in dg.hint.lower()] == [], dg.hint


@pytest.mark.parametrize("cls, shape, rule, tag, op, message, hint", FAILURES)
def test_check_turns_a_failing_op_into_a_diagnostic(cls, shape, rule, tag, op, message, hint):
    report = shapetrace.check(cls, inputs=[torch.randn(*shape)])
    assert not report.ok
    assert [(dg.rule, dg.line) for dg in report.errors] == [(rule, line_of(tag))]
    result = report.targets[0]
    assert result.error is None  # the module ran; its failure is a finding, not a crash
    assert result.trace.records[-1].error is not None
    assert report.to_json()["targets"][0]["trace"][-1]["op"] == op


def test_check_reports_the_users_own_exception():
    report = shapetrace.check(RaisesInForward, inputs=["x=B,T,C"])
    assert not report.ok
    [dg] = report.errors
    assert dg.rule == "op-failed"
    assert "ValueError" in dg.message and str(RaisesInForward.error) in dg.message
    assert Path(dg.file).resolve() == FILE
    assert dg.line == line_of("user-raise")
    assert [r.op for r in report.targets[0].trace.records] == ["F.linear", "Tensor.relu"]


def test_ops_and_modules_of_other_threads_are_not_recorded():
    import threading

    other = Block()
    stop = threading.Event()

    def busy():
        x = x_btc(3)
        while not stop.is_set():
            with torch.no_grad():
                other(x)

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        model = MHA()
        x = x_btc()
        with shapetrace.trace(model) as t:
            for _ in range(20):
                model(x)
    finally:
        stop.set()
        worker.join()
    assert t.records
    assert all(r.module.startswith("MHA") for r in t.records), {r.module for r in t.records}
    single = shapetrace.trace(model)
    with single:
        model(x)
    assert t.step_count == 20 and [run.count for run in t.steps] == [20]
    assert len(t.records) == len(single.records)  # the 19 repeats are counted, not kept


class _Holder(torch.nn.Module):
    """A container of layers that its owner reads without calling it."""

    def __init__(self):
        super().__init__()
        self.used = torch.nn.Linear(C, C)
        self.spare = torch.nn.Linear(C, C)


class _LeavesLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(C, C)
        self.extra = torch.nn.Linear(C, C)  # never called, its weight never read
        self.holder = _Holder()

    def forward(self, x):
        return self.holder.used(self.proj(x))


class _UsesLayers(_LeavesLayers):
    def forward(self, x):
        y = self.holder.used(self.proj(x))
        return self.holder.spare(self.extra(y))


def test_layers_never_used_are_listed_and_a_model_that_uses_all_lists_none():
    x = torch.randn(B, T, C)
    with shapetrace.trace(_LeavesLayers()) as t:
        t.model(x)
    assert sorted(layer.path for layer in t.unread_layers) == \
        ["_LeavesLayers.extra", "_LeavesLayers.holder.spare"]
    with shapetrace.trace(_UsesLayers()) as t:
        t.model(x)
    assert t.unread_layers == []


class _IgnoresFirst(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(C, C)

    def forward(self, x, y):
        return self.lin(y)


def test_a_tensor_handed_to_the_traced_model_counts_as_used_and_reads_no_op():
    # the step watch reads each argument's shape to know the step's kind: that read is no op
    # of the trace, and the tensor handed over counts as used whatever the forward does with it
    model = _IgnoresFirst()
    with shapetrace.trace(model) as t:
        model(torch.randn(B, T, C) * 2, torch.randn(B, T, C))
    assert [r.op for r in t.records] == ["torch.randn", "Tensor.mul", "torch.randn", "F.linear"]
    assert t.records[1].outputs[0].used >= 1
    assert not t.diagnostics


def test_functions_from_c_are_described_once_for_every_trace(monkeypatch):
    # what a torch function is, for the recorder, is worked out in each trace for Python
    # functions (a patch of their name may stand in for them) and once for functions without
    # Python code reached from C (Tensor.view, F.linear): later traces start with those
    from shapetrace.record import tracer
    from shapetrace.record.kinds import FROM_C

    model = _SoftmaxThenMix()
    with shapetrace.trace(model):
        model(x_btc())
    described = []
    real = tracer.rebound
    monkeypatch.setattr(tracer, "rebound", lambda func, frame: described.append(func)
                        or real(func, frame))
    with shapetrace.trace(model) as t:
        model(x_btc())
    ops = {r.op for r in t.records}
    assert {"F.linear", "Tensor.transpose", "Tensor.matmul", "torch.bmm"} <= ops
    assert described and all(hasattr(f, "__code__") for f in described)  # F.softmax and such
    assert not any(f in FROM_C for f in described)
    assert all(entry[2] is None and entry[3] is None for entry in FROM_C.values())


class _GrowsWhileRunning(torch.nn.Module):
    """Adds a layer on its first call (lazily built models do) and calls it."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4, 4)

    def forward(self, x):
        if not hasattr(self, "second"):
            self.second = torch.nn.Linear(4, 6)
        return self.second(self.first(x))


def test_the_models_modules_are_walked_once_and_handed_to_the_trace():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
    with shapetrace.trace(model) as t:
        model(torch.randn(2, 4))
    assert [id(m) for m in t.model_modules] == [id(m) for m in model.modules()]


def test_a_model_that_grows_while_recording_is_walked_again():
    model = _GrowsWhileRunning()
    with shapetrace.trace(model) as t:
        model(torch.randn(2, 4))
    assert t.model_modules is None  # the walk before the block missed the new layer
    assert (6, 4) in t.weight_shapes  # read from the model as the block left it
    assert {rec.module for rec in t.records} >= {"_GrowsWhileRunning.first",
                                                    "_GrowsWhileRunning.second"}
