"""Probe sizes that do not fit in memory: refused before anything is allocated (exit 2, one line
naming the sizes), and an allocation that fails anyway is never the user's bug nor shapetrace's.
A probe size the constructor refuses (an odd width for sinusoidal positions) is not the user's
bug either: one line says which dims to give.

No test here allocates much: the machine's free memory is replaced by a small number, and the
failures of real allocations are torch's own errors raised by stand-ins or by sizes whose byte
count overflows (refused before any memory is asked for).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import shapetrace as st
from shapetrace.drive import fit as _fit
from shapetrace.base.dims import Dims as _Dims
from shapetrace.drive.attempt import build as _build_plan
from shapetrace.drive.plan import Request, make_plan


def _build(module, init, inputs, dims, seed, mode):
    """The module and its inputs as ``check()`` builds them, under ``mode``."""
    request = Request(module, dims if isinstance(dims, _Dims) else _Dims(dims), module.__name__,
                      init=init, inputs=inputs, seed=seed)
    return _build_plan(make_plan(request), mode)
from shapetrace.frontends.cli import main
from shapetrace.base.dims import Dims
from shapetrace.base.errors import ShapetraceError, TargetError, UsageError
from shapetrace.drive.fit import Memory, TooLarge

from test_cli import assert_one_line_error

ATTENTION = """\
import math
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        att = att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        att = att.softmax(dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)
"""
#: torch's own words when the CPU allocator is refused memory
ALLOC_FAILED = ("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                "memory: you tried to allocate 47244640256 bytes. Error code 12 (Cannot allocate "
                "memory)")
GB = 10**9


def _write(path: Path, text: str) -> str:
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def memory(monkeypatch):
    """Set the memory shapetrace believes this machine has free (bytes, or None: unknown)."""

    def set_free(n):
        monkeypatch.setattr(_fit, "available_memory", lambda: None if n is None else Memory(n))

    set_free(2 * GB)
    return set_free


@pytest.fixture
def attention_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return _write(tmp_path / "att.py", ATTENTION)


# --- refused before the run ---------------------------------------------------------------------

def test_cli_refuses_sizes_that_do_not_fit(attention_file, memory, capsys):
    assert main([attention_file, "--dims", "B=64,T=4096", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    (target,) = json.loads(out)["targets"]
    assert target["diagnostics"] == []
    assert "op-failed" not in target["error"] and not target["checks"]["ran"]
    assert_one_line_error(err, "att.py::Attention", "at B=64, T=4096 one forward pass needs about",
                          "GB; only 2.0 GB of memory is free. Use smaller sizes.")
    assert "L=" not in err  # derived from T, not chosen by the user
    assert "internal error" not in err and "report it" not in err


def test_estimate_is_the_attention_scores(attention_file, memory, capsys):
    """The estimate names the real cost: B*H*T*T float32 scores, two alive at once (the matmul's
    and the division's), 47 GB each."""
    main([attention_file, "--dims", "B=64,T=4096", "--format", "json"])
    err = capsys.readouterr().err
    needed = float(err.split("needs about ")[1].split(" GB")[0])
    scores = 64 * 11 * 4096 * 4096 * 4 / GB
    assert 2 * scores <= needed <= 3 * scores


def test_check_api_reports_the_sizes_as_its_error(memory, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _write(tmp_path / "fit_attention_api.py", ATTENTION)
    from fit_attention_api import Attention

    report = st.check(Attention, dims={"B": 64, "T": 4096})
    (result,) = report.targets
    assert result.error.startswith("at B=64, T=4096 one forward pass needs about")
    assert isinstance(result.exception, TooLarge) and isinstance(result.exception, UsageError)
    assert result.diagnostics == []


def test_sizes_that_fit_run(attention_file, memory, capsys):
    memory(20 * GB)
    assert main([attention_file, "--dims", "B=2,T=64", "--format", "json", "--no-trace"]) == 0
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert target["error"] is None and target["dims"]["T"] == 64


def test_default_sizes_skip_the_estimate(attention_file, memory, monkeypatch, capsys):
    """At the defaults nothing is estimated (the fake run costs an import of torch's compiler
    stack), even on a machine that says it has only 2 GB free."""
    def fail(build):
        raise AssertionError("estimated at the default sizes")

    monkeypatch.setattr(_fit, "estimate", fail)
    assert main([attention_file, "--format", "json", "--no-trace"]) == 0


def test_unknown_memory_runs_without_estimate(attention_file, memory, monkeypatch, capsys):
    memory(None)
    monkeypatch.setattr(_fit, "estimate", lambda build: pytest.fail("estimated without a limit"))
    assert main([attention_file, "--dims", "T=11", "--format", "json", "--no-trace"]) == 0


def test_behaviour_checks_skipped_when_only_they_do_not_fit(memory, monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(tmp_path))
    _write(tmp_path / "fit_attention_behaviour.py", ATTENTION)
    from fit_attention_behaviour import Attention

    dims = Dims({"T": 64})
    found = _fit.estimate(lambda mode: _build(Attention, None, None, dims, 0, mode))
    assert _fit.needs(found.forward) < _fit.needs(found.behaviour)
    memory(_fit.needs(found.forward) + 1)
    monkeypatch.setattr(_fit, "worth_estimating", lambda *a, **k: True)
    import shapetrace.behaviour as behaviour

    monkeypatch.setattr(behaviour, "run_behaviour",
                        lambda *a, **k: pytest.fail("behaviour checks ran"))
    (result,) = st.check(Attention, dims={"T": 64}).targets
    assert result.error is None
    assert any(n.startswith("batch-leak, causal-leak and nondeterministic-eval not checked: at "
                            "T=64 they need about") for n in result.notes), result.notes


def test_a_module_that_needs_values_gets_no_estimate(memory, monkeypatch, tmp_path):
    """The fake run cannot read values (``.item()``): no estimate, the real run goes ahead."""
    monkeypatch.syspath_prepend(str(tmp_path))
    _write(tmp_path / "fit_reads_value.py", """\
        import torch
        from torch import nn


        class ReadsValue(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                if x.abs().max().item() > 1e9:
                    return x
                return self.lin(x)
        """)
    from fit_reads_value import ReadsValue

    monkeypatch.setattr(_fit, "worth_estimating", lambda *a, **k: True)
    dims = Dims({"T": 11})
    assert _fit.estimate(lambda mode: _build(ReadsValue, None, None, dims, 0, mode)) is None
    (result,) = st.check(ReadsValue, dims={"T": 11}).targets
    assert result.error is None and result.ok


# --- the estimate -------------------------------------------------------------------------------

class Scores(nn.Module):
    """No parameters; one (B, T, T) tensor made from the input, then a softmax of it."""

    def forward(self, x):
        return (x @ x.transpose(-2, -1)).softmax(-1)


class ViewsAndInPlace(nn.Module):
    """Only views and in-place ops: nothing beyond the input is allocated."""

    def forward(self, x):
        y = x.view(x.shape[0], -1).T
        y.mul_(2).add_(1)
        return x.transpose(1, 2)


class Sequential(nn.Module):
    """Three large temporaries one after the other: only one alive at a time."""

    def forward(self, x):
        for _ in range(3):
            t = x.repeat(1, 1, 10)
            x = x + t.sum(-1, keepdim=True)
            del t
        return x


def _estimate(cls, dims):
    dims = Dims(dims)
    return _fit.estimate(lambda mode: _build(cls, None, ["x=B,T,C"], dims, 0, mode))


def test_estimate_counts_outputs_alive_at_once():
    B, T, C = 5, 7, 143
    found = _estimate(Scores, {})
    x, scores = B * T * C * 4, B * T * T * 4
    assert found.forward == x + 2 * scores  # the input, the scores and their softmax


def test_estimate_leaves_out_views_and_in_place_results():
    assert _estimate(ViewsAndInPlace, {}).forward == 5 * 7 * 143 * 4


def test_estimate_frees_what_dies():
    x = 5 * 7 * 143 * 4
    peak = _estimate(Sequential, {}).forward
    assert peak < x + 2 * 10 * x  # never two of the repeats at once
    assert peak >= x + 10 * x


def test_estimate_counts_parameters_of_a_class():
    found = _fit.estimate(lambda mode: (nn.Linear(1000, 1000, dtype=torch.float64),
                                        [torch.zeros(1, 1000, dtype=torch.float64)]))
    assert found is not None
    assert found.forward >= 1000 * 1000 * 8


@pytest.mark.parametrize("dims, init, worth", [
    pytest.param({}, None, False, id="defaults"),
    pytest.param({"d": 8}, None, False, id="smaller-head"),
    pytest.param({"T": 11}, None, False, id="slightly-longer"),
    pytest.param({"B": 64, "T": 4096}, None, True, id="long-sequences"),
    pytest.param({}, {"vocab_size": 50257}, True, id="large-vocabulary-argument"),
])
def test_worth_estimating(dims, init, worth):
    assert _fit.worth_estimating(Dims(dims), init, Memory(16 * GB)) is worth


def test_sizes_shown_are_the_users():
    assert _fit.sizes_shown(Dims({"B": 64, "T": 4096})) == "B=64, T=4096"
    assert _fit.sizes_shown(Dims({"B": 64, "d": 8})) == "B=64"


def test_available_memory_reads_this_machine():
    found = _fit.available_memory()
    assert found is not None and found.bytes > 0


def test_address_space_limit_lowers_available_memory(monkeypatch):
    monkeypatch.setattr(_fit, "_meminfo_available", lambda: 64 * GB)
    monkeypatch.setattr(_fit, "_cgroup_room", lambda: None)
    monkeypatch.setattr(_fit, "_address_space_room", lambda: 3 * GB)
    assert _fit.available_memory() == Memory(3 * GB)


# --- an allocation that fails anyway ------------------------------------------------------------

@pytest.mark.parametrize("exc, oom", [
    pytest.param(RuntimeError(ALLOC_FAILED), True, id="cpu-allocator"),
    pytest.param(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"), True,
                 id="torch-out-of-memory"),
    pytest.param(MemoryError(), True, id="python-memory-error"),
    pytest.param(RuntimeError("Storage size calculation overflowed with sizes=[10, 10]"), True,
                 id="byte-count-overflow"),
    pytest.param(RuntimeError("sequence too large for block_size"), False, id="users-own-error"),
    pytest.param(RuntimeError("mat1 and mat2 shapes cannot be multiplied (35x143 and 13x143)"),
                 False, id="shape-error"),
    pytest.param(ValueError("out of memory"), False, id="not-a-runtime-error"),
])
def test_out_of_memory(exc, oom):
    assert _fit.out_of_memory(exc) is oom


def test_out_of_memory_follows_the_cause():
    try:
        try:
            raise RuntimeError(ALLOC_FAILED)
        except RuntimeError as inner:
            raise TargetError("Attention(...) raised RuntimeError") from inner
    except TargetError as exc:
        assert _fit.out_of_memory(exc)


FAILING = """\
import torch
from torch import nn


class Failing(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.lin = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        y = self.lin(x)
        scores = torch.matmul(y, y.transpose(-2, -1))
        return scores
"""


def _stand_in(matmul, message: str):
    """``torch.matmul`` failing as torch does for the (B, T, T) scores, in a frame that is not the
    user's (compiled under a ``<frozen ...>`` name, as Python's own modules are)."""
    source = ("def matmul(a, b, *args, **kwargs):\n"
              "    if a.dim() == 3 and b.shape[-2:] == a.shape[-2:][::-1] and a.shape[-1] != a.shape[-2]:\n"
              "        raise RuntimeError(message)\n"
              "    return real(a, b, *args, **kwargs)\n")
    scope = {"real": matmul, "message": message}
    exec(compile(source, "<frozen torch stand-in>", "exec"), scope)
    return scope["matmul"]


@pytest.mark.parametrize("message", [
    pytest.param(ALLOC_FAILED, id="cpu-allocator-refused"),
    pytest.param("Storage size calculation overflowed with sizes=[5, 4096, 4096]", id="overflow"),
])
def test_allocation_failing_in_forward_is_not_the_users_bug(tmp_path, monkeypatch, memory, capsys,
                                                             message):
    """The scores' matmul fails to allocate (a stand-in raises torch's own error): exit 2 with
    one line naming the sizes and the line, no op-failed finding, no transpose hint."""
    memory(None)  # no estimate: only the failure itself tells
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "failing.py", FAILING)
    monkeypatch.setattr(torch, "matmul", _stand_in(torch.matmul, message))
    assert main(["failing.py", "--dims", "T=4096", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    (target,) = json.loads(out)["targets"]
    assert target["diagnostics"] == []
    assert_one_line_error(err, "failing.py::Failing", "at T=4096 the run ran out of memory in "
                          "failing.py:12", "Use smaller sizes.")
    assert "transpose" not in err.lower() and "report it" not in err


def test_allocation_failing_in_the_constructor(tmp_path, monkeypatch, memory, capsys):
    """A buffer whose byte count overflows: refused by torch before any memory is asked for."""
    memory(None)
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "huge.py", """\
        import torch
        from torch import nn


        class Huge(nn.Module):
            def __init__(self, n_embd, block_size):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)
                self.register_buffer("mask", torch.ones(block_size, block_size))

            def forward(self, x):
                return self.lin(x)
        """)
    assert main(["huge.py", "--dims", "T=10000000000000", "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "huge.py::Huge", "at T=10000000000000 the run ran out of memory",
                          "Use smaller sizes.")
    assert "raised RuntimeError" not in err


def test_allocation_failing_for_the_inputs(attention_file, monkeypatch, memory, capsys):
    """Making the inputs fails (a stand-in): still the sizes, never 'internal error'."""
    memory(None)
    from shapetrace.base import specs as _spec

    def make_input(spec, dims, *, generator=None):
        raise RuntimeError(ALLOC_FAILED)

    monkeypatch.setattr(_spec, "make_input", make_input)
    assert main([attention_file, "--dims", "B=100000000", "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "at B=100000000 the run ran out of memory", "(one tensor of 47 GB)")
    assert "internal error" not in err


def test_users_own_runtime_error_is_still_op_failed(tmp_path, monkeypatch, memory, capsys):
    memory(None)
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "raises.py", """\
        from torch import nn


        class Raises(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                raise RuntimeError("sequence too large for block_size")
        """)
    assert main(["raises.py", "--format", "json"]) == 1
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert target["error"] is None
    assert [d["rule"] for d in target["diagnostics"]] == ["op-failed"]


def test_too_large_is_a_shapetrace_error():
    assert issubclass(TooLarge, ShapetraceError)


# --- a constructor that refuses an odd probe size --------------------------------------------

class SinusoidalPositions(nn.Module):
    """Sinusoidal tables need an even width (Whisper's encoder checks the same)."""

    def __init__(self, d_model, block_size):
        super().__init__()
        if d_model % 2:
            raise ValueError(f"d_model must be divisible by 2 for sinusoidal positions, got {d_model}")
        pos = torch.arange(block_size)[:, None] / 10000 ** (torch.arange(0, d_model, 2) / d_model)
        self.register_buffer("table", torch.cat([pos.sin(), pos.cos()], dim=-1))

    def forward(self, x):
        return x + self.table[: x.shape[1]]


def test_odd_probe_width_is_built_again_at_an_even_one():
    (result,) = st.check(SinusoidalPositions, inputs=["x=B,T,C"]).targets
    assert result.error is None and result.ok
    assert any("the constructor needs an even width" in n for n in result.notes)


def test_an_odd_width_the_user_chose_is_a_target_error_that_says_which_dims_to_give():
    (result,) = st.check(SinusoidalPositions, inputs=["x=B,T,C"], dims={"d": 13}).targets
    assert result.error is not None and "\n" not in result.error
    assert "ValueError" in result.error and "got 143" in result.error
    assert "C=143 is odd" in result.error and "--dims d=8, which makes C=88" in result.error
    assert not result.diagnostics  # not the module's bug
    (again,) = st.check(SinusoidalPositions, inputs=["x=B,T,C"], dims={"d": 8}).targets
    assert again.error is None and again.ok


def test_an_odd_size_the_error_does_not_blame_gets_no_advice():
    class Other(nn.Module):
        def __init__(self, d_model, reason):
            super().__init__()
            raise ValueError(reason)

    for reason in ("unsupported activation", "n_layers must be divisible by 2, got 3"):
        (other,) = st.check(Other, init={"reason": reason}, inputs=["x=B,T,C"]).targets
        assert reason in other.error
        assert "is odd" not in other.error and "--dims" not in other.error
        assert "d_model=143" in other.error  # not built again at an even width


def test_a_fake_run_that_fails_logs_and_warns_nothing(memory, monkeypatch, tmp_path, caplog):
    """torch logs an op that raises under a fake mode (with its traceback) and warns about fake
    tensors' data pointers: neither reaches the user; the real run says what went wrong."""
    import logging
    import warnings

    monkeypatch.syspath_prepend(str(tmp_path))
    _write(tmp_path / "fit_misfit.py", """\
        import torch
        from torch import nn


        class Misfit(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(4 * n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
        """)
    from fit_misfit import Misfit

    dims = Dims({"T": 11})
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert _fit.estimate(lambda mode: _build(Misfit, None, None, dims, 0, mode)) is None
    assert not [r for r in caplog.records if r.name.startswith("torch")], caplog.records
    assert not seen, [str(w.message) for w in seen]
    assert not logging.getLogger("torch._subclasses.fake_tensor").disabled  # put back
