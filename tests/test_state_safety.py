"""``check()`` leaves what it is given as it was; traces survive unusual code and failures."""

from __future__ import annotations

import gc
import re
import textwrap
import weakref

import pytest
import torch
import torch.nn as nn

import shapetrace
from shapetrace.drive.check import check_target
from shapetrace.frontends.cli import main


# --- check() leaves an instance and the global random state as they were -----------------------

class Counting(nn.Module):
    """Writes its buffers and attributes in forward, uses dropout, draws random numbers."""

    def __init__(self, d_in: int = 8):
        super().__init__()
        self.proj = nn.Linear(d_in, d_in)
        self.drop = nn.Dropout(0.1)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("cache", torch.zeros(1))

    def forward(self, x):
        self.steps += 1
        self.cache = x.detach().sum(-1)  # replaces the buffer
        self.last = x.shape  # a plain attribute, new on the first call
        return self.drop(self.proj(x)) + 0 * torch.rand(())


class Stepping(nn.Module):
    """Changes its parameters in place in forward."""

    def __init__(self, d_in: int = 8):
        super().__init__()
        self.proj = nn.Linear(d_in, d_in)

    def forward(self, x):
        with torch.no_grad():
            self.proj.weight.mul_(0.5)
        return self.proj(x)


def _snapshot(model: nn.Module):
    return ({k: (v, v.detach().clone()) for k, v in model.state_dict(keep_vars=True).items()},
            [(m, m.training) for m in model.modules()],
            {name: dict(vars(m)).keys() for name, m in model.named_modules()})


@pytest.mark.parametrize("make", [
    pytest.param(lambda: Counting().train(), id="buffers-written-train-mode"),
    pytest.param(lambda: Counting().eval(), id="buffers-written-eval-mode"),
    pytest.param(lambda: Stepping().train(), id="parameters-changed-in-place"),
    pytest.param(lambda: nn.Sequential(Counting().eval(), Counting().train()),
                 id="mixed-training-flags"),
])
def test_check_leaves_the_instance_as_it_was(make):
    torch.manual_seed(1234)
    model = make()
    tensors, flags, attrs = _snapshot(model)
    rng = torch.get_rng_state()
    shapetrace.check(model, inputs=["x=B,T,8"])
    assert torch.equal(torch.get_rng_state(), rng)
    after = model.state_dict(keep_vars=True)
    assert after.keys() == tensors.keys()
    for key, (tensor, value) in tensors.items():
        assert after[key] is tensor, key  # the very same tensor objects
        assert torch.equal(tensor, value), key  # bit-identical values
    assert [(m, m.training) for m in model.modules()] == flags
    assert {name: dict(vars(m)).keys() for name, m in model.named_modules()} == attrs


@pytest.mark.parametrize("target", [
    pytest.param(Counting, id="class"),
    pytest.param(Counting(), id="instance"),
])
def test_check_restores_the_global_random_state(target):
    torch.manual_seed(99)
    rng = torch.get_rng_state()
    expected = torch.rand(3)
    torch.set_rng_state(rng)
    shapetrace.check(target, inputs=["x=B,T,C"])
    assert torch.equal(torch.get_rng_state(), rng)
    assert torch.equal(torch.rand(3), expected)


def test_check_of_an_instance_keeps_gradients():
    model = Stepping()
    model(torch.randn(2, 8)).sum().backward()
    grad = model.proj.weight.grad
    saved = grad.clone()
    shapetrace.check(model, inputs=["x=B,T,8"])
    assert model.proj.weight.grad is grad and torch.equal(grad, saved)


# --- a forward raising a BaseException is the module's failure, not a crash ------------------

class Stop(BaseException):
    pass


class Raising(nn.Module):
    error: type[BaseException] = Stop

    def forward(self, x):
        y = x * 2
        raise self.error("stopped here")


def _raising(error):
    return type(f"Raising{error.__name__}", (Raising,), {"error": error})


@pytest.mark.parametrize("error", [
    pytest.param(Stop, id="custom-BaseException"),
    pytest.param(GeneratorExit, id="GeneratorExit"),
    pytest.param(ValueError, id="plain-Exception"),
])
def test_forward_raising_any_base_exception_is_reported(error):
    report = shapetrace.check(_raising(error), inputs=["x=B,T,C"])
    failed = [d for d in report.diagnostics if d.rule == "op-failed"]
    assert failed and f"forward raised {error.__name__}: stopped here" in failed[0].message


@pytest.mark.parametrize("error", [
    pytest.param(KeyboardInterrupt, id="KeyboardInterrupt"),
    pytest.param(SystemExit, id="SystemExit"),  # the command line explains exit() itself
])
def test_interrupt_and_exit_in_forward_propagate(error):
    with pytest.raises(error):
        shapetrace.check(_raising(error), inputs=["x=B,T,C"])


@pytest.mark.parametrize("base", [
    pytest.param("BaseException", id="custom-BaseException"),
    pytest.param("GeneratorExit", id="GeneratorExit"),
])
def test_cli_reports_a_forward_raising_a_base_exception(tmp_path, capsys, base):
    path = tmp_path / "stopping.py"
    path.write_text(textwrap.dedent(f"""
        import torch.nn as nn

        class Stop({base}):
            pass

        class Model(nn.Module):
            def forward(self, x):
                raise Stop("stopped here")
    """))
    code = main([f"{path}::Model", "--input", "x=B,T,C"])
    captured = capsys.readouterr()
    assert code == 1
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert "stopped here" in captured.out + captured.err


# --- a failed block does not keep the forward's frames alive longer than needed -----------------

class Allocating(nn.Module):
    """Holds a 50 MB local when it raises."""

    def forward(self, x):
        big = torch.zeros(13_000_000)
        Allocating.ref = weakref.ref(big)
        raise ValueError("after allocating")


def test_a_trace_kept_after_a_failure_holds_no_frames():
    """The caller's exception propagates untouched, traceback and all; the trace keeps a copy
    without frames, so a kept trace does not keep the forward's locals (a 50 MB tensor) alive."""
    model = Allocating()
    try:
        with shapetrace.trace(model) as t:
            model(torch.randn(2, 3))
    except ValueError as exc:
        assert exc.__traceback__ is not None  # the user's own exception is left as it was
        assert type(t.exception) is ValueError and str(t.exception) == str(exc)
    gc.collect()
    assert Allocating.ref() is None  # freed while the trace is still held
    assert t.exception.__traceback__ is None and t.exception.__context__ is None
    assert len(t.records) > 0


class _Keyword(Exception):
    """An exception whose __init__ must not run again (it counts)."""
    made = 0

    def __init__(self, message, *, code):
        super().__init__(message)
        self.code = code
        _Keyword.made += 1


@pytest.mark.parametrize("error", [
    pytest.param(OSError(2, "No such file", "weights.pt"), id="oserror-filename"),
    pytest.param(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"), id="unicode"),
    pytest.param(KeyError("q_proj"), id="keyerror"),
    pytest.param(_Keyword("stop", code=3), id="user-keyword-init"),
])
def test_the_kept_exception_reads_as_the_original(error):
    made = _Keyword.made
    with pytest.raises(type(error)) as info:
        with shapetrace.trace() as t:
            torch.ones(2).relu()
            raise error
    assert info.value is error and error.__traceback__ is not None
    assert type(t.exception) is type(error) and str(t.exception) == str(error)
    assert t.exception.__traceback__ is None
    assert getattr(t.exception, "code", None) == getattr(error, "code", None)
    assert _Keyword.made == made  # the user's class was not called again


@pytest.mark.parametrize("target", [
    pytest.param(Allocating, id="class"),
    pytest.param(Allocating(), id="instance"),
])
def test_check_result_does_not_keep_the_forward_frames(target):
    result = check_target(target, inputs=["x=B,T,C"])
    gc.collect()
    assert result.trace is not None and result.diagnostics
    assert Allocating.ref() is None


# --- unusual but valid code inside a trace ------------------------------------------------------

def _csr_matmul():
    return torch.randn(4, 4).to_sparse_csr() @ torch.randn(4, 3)


def _csr_add():
    a = torch.randn(4, 4).to_sparse_csr()
    return (a + a).to_dense().relu()


def _nested():
    nt = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
    return (nt * 2).softmax(-1)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("body", [
    pytest.param(_csr_matmul, id="sparse-csr-matmul"),
    pytest.param(_csr_add, id="sparse-csr-add"),
    pytest.param(_nested, id="strided-nested-tensor"),
])
def test_odd_layouts_are_traced_without_crashing(body):
    with shapetrace.trace() as t:
        body()
    assert len(t.records) > 0
    assert isinstance(t.diagnostics, list)
    t.to_json()


def _graph(traced) -> list[tuple]:
    """The graph's nodes and their input and output types (value names and source comments
    come from the Python frames an op was called from, the trace's among them)."""
    def kind(v) -> str:
        return re.sub(r"___torch_mangle_\d+\.", "", str(v.type()))

    return [(node.kind(), [kind(v) for v in node.inputs()], [kind(v) for v in node.outputs()])
            for node in traced.inlined_graph.nodes()]


class _ProjectThenAttend(nn.Module):
    """A projection, then self-attention: the model a user traces with torch.jit.trace."""

    def __init__(self, d: int = 4):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)

    def forward(self, x):
        y = self.proj(x)
        return self.attn(y, y, y)[0]


@pytest.mark.parametrize("make", [
    pytest.param(lambda: nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval(), id="sequential"),
    pytest.param(lambda: nn.Sequential(nn.Linear(4, 4), nn.ReLU()).train(), id="sequential-train"),
    pytest.param(lambda: nn.MultiheadAttention(4, 2, batch_first=True).eval(),
                 id="multihead-attention"),
    # train mode: in eval mode torch's own sanity check fails on it untraced (the check runs
    # without gradients, where self-attention takes the fused path)
    pytest.param(lambda: _ProjectThenAttend().train(), id="projection-then-attention"),
])
def test_jit_trace_inside_a_trace(make):
    # torch.jit.trace runs its own sanity check (the module traced twice, the graphs compared):
    # the trace's watch of each step's output must not read values into the jit graph.
    torch.manual_seed(0)
    model = make()
    x = torch.randn(2, 3, 4)
    args = (x, x, x) if isinstance(model, nn.MultiheadAttention) else (x,)
    expected = torch.jit.trace(model, args)
    with shapetrace.trace(model) as t:
        traced = torch.jit.trace(model, args)
        out = traced(*args)
    assert _graph(traced) == _graph(expected)  # the trace's size reads are not in the graph
    ref = expected(*args)
    for a, b in zip(out if isinstance(out, tuple) else (out,),
                    ref if isinstance(ref, tuple) else (ref,)):
        assert torch.equal(a, b)
    assert all(isinstance(s, int) for r in t.records for m in r.inputs for s in m.shape)
    with shapetrace.trace(model) as after:  # recording resumes once jit tracing is over
        model(*args)
    assert len(after.records) > 0


# --- torch.compile ------------------------------------------------------------------------------

def test_check_of_a_compiled_module_traces_the_eager_one():
    class Compiled(nn.Module):  # what torch.compile returns, without compiling anything
        def __init__(self, inner):
            super().__init__()
            self._orig_mod = inner

        def forward(self, *args):
            raise AssertionError("the compiled forward must not be traced")

    result = check_target(Compiled(Counting()), inputs=["x=B,T,8"])
    assert result.error is None
    assert "traced the eager module behind torch.compile" in result.notes
    assert result.trace is not None and len(result.trace.records) > 0
