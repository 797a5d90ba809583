"""One test per assumption shapetrace makes about torch's private internals (``_compat``).

When a torch release moves one of them, the failing test here names it; nothing else in the
package touches private torch.
"""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import shapetrace
from shapetrace.base import compat as _compat
from shapetrace.base.ops import op_name


class _Seen(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(op_name(func))
        return func(*args, **(kwargs or {}))


def test_disable_torch_function_hides_ops_from_an_active_mode():
    x = torch.ones(3)
    with _Seen() as seen:
        with _compat.disable_torch_function():
            x.sum()
        x.mean()
    assert seen.names == ["Tensor.mean"]


def test_fake_tensors_are_recognised_and_their_constants_found():
    FakeTensorMode, DataDependent, DynamicShape, Unsupported = _compat.fake_tensor_api()
    assert all(issubclass(e, Exception) for e in (DataDependent, DynamicShape, Unsupported))
    with FakeTensorMode() as mode:
        fake = torch.empty(2, 3)
        constant = torch.tensor(13.0)
    assert _compat.is_fake(fake) and not _compat.is_fake(torch.empty(2))
    assert _compat.fake_constant(fake) is None
    assert float(_compat.fake_constant(constant)) == 13.0
    assert mode is not None


@pytest.mark.parametrize("module, namespace", [
    pytest.param("torch._C._fft", "fft", id="fft"),
    pytest.param("torch._C._linalg", "linalg", id="linalg"),
    pytest.param("torch._C._nn", None, id="nn-is-F"),
    pytest.param("torch.nn.functional", None, id="public"),
])
def test_private_namespaces_map_to_public_ones(module, namespace):
    assert _compat.public_namespace(module) == namespace


@pytest.mark.parametrize("func, name", [
    pytest.param(torch.fft.fft, "torch.fft.fft", id="fft"),
    pytest.param(F.gelu, "F.gelu", id="c-nn-function"),
    pytest.param(F.softmax, "F.softmax", id="python-function"),
])
def test_private_functions_are_named_by_their_public_names(func, name):
    assert op_name(func) == name


def test_c_functions_of_nn_functional_live_in_the_private_nn_module():
    assert F.gelu.__module__ == _compat.NN_MODULE


def test_multi_head_attention_forward_has_a_transparent_body():
    bodies = _compat.transparent_bodies()
    assert F.multi_head_attention_forward in bodies
    body = bodies[F.multi_head_attention_forward]
    assert body.__code__ is F.multi_head_attention_forward.__code__
    assert body.__globals__["has_torch_function"]() is False


def test_a_patched_softmax_is_honoured_inside_multihead_attention(monkeypatch):
    calls = []
    real = F.softmax

    def counting_softmax(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "softmax", counting_softmax)  # after shapetrace was imported
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 3, 8)
    with torch.no_grad(), shapetrace.trace(mha) as t:
        mha(x, x, x, need_weights=True)
    assert calls, "the patched F.softmax was not called inside nn.MultiheadAttention"
    assert any(r.op == "F.linear" for r in t.records)  # still traced at the student's level


def test_caller_frame_and_instruction_positions():
    def here():
        return _compat.caller_frame(0), _compat.caller_frame(1)

    mine, caller = here()
    assert mine.f_code.co_name == "here"
    assert caller.f_code is sys._getframe().f_code
    line, end_line, col, end_col = _compat.instruction_position(caller.f_code, caller.f_lasti)
    assert line is not None and line > caller.f_code.co_firstlineno
    assert col is not None and end_col is not None


def test_module_tensors_are_every_parameter_and_buffer_once():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), shared, nn.Sequential(shared))
    model.register_buffer("scale", torch.ones(5))
    found = _compat.module_tensors(model)
    assert len(found) == len({id(t) for t in found})
    assert {id(t) for t in found} == {id(t) for t in (*model.parameters(), *model.buffers())}


def test_all_modules_are_every_module_once():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(nn.Linear(2, 3), shared, nn.Sequential(shared, nn.ReLU()))
    model.add_module("missing", None)
    found = _compat.all_modules(model)
    assert [id(m) for m in found] == [id(m) for m in model.modules()]  # in its order


def test_module_paths_name_modules_as_named_modules_does():
    shared = nn.Linear(2, 2)
    inner = nn.Sequential(nn.Linear(2, 2), shared)
    model = nn.Sequential(inner, shared, nn.ModuleDict({"a": nn.ReLU(), "b": inner}))
    model.add_module("missing", None)
    expected = {id(m): f"Root.{name}" if name else "Root" for name, m in model.named_modules()}
    assert _compat.module_paths(model, "Root") == expected
    assert _compat.module_paths(model, "Root")[id(shared)] == "Root.0.1"  # its first path
    paths, modules = _compat.module_tree(model, "Root")
    assert paths == expected
    assert [id(m) for m in modules] == [id(m) for m in _compat.all_modules(model)]


def test_module_tables_are_where_a_module_keeps_its_slots():
    model = nn.Sequential(nn.Linear(2, 3))
    model.register_buffer("scale", None)
    params, buffers, modules = _compat.module_tables(model[0])
    assert params["weight"] is model[0].weight and set(params) == {"weight", "bias"}
    _, buffers, modules = _compat.module_tables(model)
    assert "scale" in buffers and buffers["scale"] is None  # a slot holding None
    assert modules["0"] is model[0]


def test_frame_getter_is_the_frame_lookup():
    def here():
        return _compat.frame_getter()(0), _compat.frame_getter()(1)

    mine, caller = here()
    assert mine.f_code.co_name == "here"
    assert caller.f_code is sys._getframe().f_code


def test_own_hook_count_counts_forward_hooks_and_pre_hooks():
    from shapetrace.base.compat import own_hook_count

    layer = torch.nn.Linear(2, 2)
    assert own_hook_count(layer) == 0
    handles = [layer.register_forward_hook(lambda *a: None),
               layer.register_forward_pre_hook(lambda *a: None)]
    assert own_hook_count(layer) == 2
    for handle in handles:
        handle.remove()
    assert own_hook_count(layer) == 0


def test_same_qkv_width_reads_the_packed_projection():
    from shapetrace.base.compat import same_qkv_width

    assert same_qkv_width(torch.nn.MultiheadAttention(8, 2))
    assert not same_qkv_width(torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=4))


def test_a_mode_comes_off_the_stack_and_goes_back():
    from torch.overrides import TorchFunctionMode

    from shapetrace.base.compat import mode_on_top, pop_mode, push_mode

    seen = []

    class Counting(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    mode = Counting()
    with mode:
        assert mode_on_top(mode)
        pop_mode()
        assert not mode_on_top(mode)
        torch.ones(2) + 1  # not seen: the mode is off the stack
        assert seen == []
        push_mode(mode)
        assert mode_on_top(mode)
        torch.ones(2) + 1
        assert seen
        with Counting() as inner:
            assert mode_on_top(inner) and not mode_on_top(mode)
    assert not mode_on_top(mode)


def test_an_in_place_write_moves_the_version_of_a_tensor_and_of_its_views():
    t = torch.zeros(4)
    before = _compat.version_of(t)
    t[:2].add_(1)
    assert _compat.version_of(t) > before
    assert _compat.version_of(t.view(2, 2)) == _compat.version_of(t)
    same = _compat.version_of(t)
    t + 1
    assert _compat.version_of(t) == same
    with torch.inference_mode():
        assert _compat.version_of(torch.zeros(2)) is None


def test_a_compiled_module_holds_its_eager_module_as_a_submodule():
    model = nn.Linear(2, 2)
    assert _compat.eager_module(torch.compile(model)) is model
    assert _compat.eager_module(model) is None and _compat.eager_module(None) is None


def test_compiled_code_runs_eagerly_inside_compiler_off_and_compiles_again_after():
    import warnings

    import torch._dynamo

    config = torch._dynamo.config
    before, filters = config.disable, list(warnings.filters)
    with _compat.compiler_off():
        assert config.disable is True
        assert len(warnings.filters) == len(filters) + 1
    assert config.disable == before and warnings.filters == filters


def test_the_tracing_check_is_true_inside_torch_jit_trace_only():
    check = _compat.tracing_check()
    seen = []

    def forward(x):
        seen.append(check())
        return x * 2

    assert not check()
    torch.jit.trace(forward, torch.ones(2), check_trace=False)
    assert seen == [True] and not check()


def _doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_a_script_function_keeps_the_python_function_it_was_compiled_from():
    from shapetrace.base.compat import script_original

    scripted = torch.jit.script(_doubled)
    assert isinstance(scripted, torch.jit.ScriptFunction)
    assert script_original(scripted) is _doubled
    assert script_original(_doubled) is None
    compiled = _compat.script_function_class()
    assert isinstance(scripted, compiled) and not isinstance(_doubled, compiled)


def test_a_python_torch_function_hands_its_call_over_from_its_own_frame():
    """``dispatching_caller``: torch's Python functions (``F.softmax``) hand a call to a mode
    through ``handle_torch_function``, whose caller is the function's own running frame; a
    call from C (``torch.ones``) has no such frame."""
    from shapetrace.base.compat import dispatching_caller

    callers = []

    class Looking(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            caller = dispatching_caller(sys._getframe(1))
            callers.append(caller.f_code.co_name if caller is not None else None)
            return func(*args, **(kwargs or {}))

    x = torch.ones(3)
    with Looking():
        F.softmax(x, dim=0)
        torch.ones(2)
    assert callers == ["softmax", None]
