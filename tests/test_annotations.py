"""annotation-mismatch: jaxtyping/beartype violations become one readable Diagnostic, an optional
mask of the style corpus (tests/data/styles/annotated.py) included."""

import inspect
import os
from pathlib import Path

import jaxtyping
import pytest
import torch
from beartype import beartype
from jaxtyping import Bool, Float, jaxtyped
from torch import Tensor

import reference_models as rm
import style_corpus
from shapetrace.rules.annotations import annotation_diagnostic, is_annotation_violation
from shapetrace.report.results import Diagnostic
from shapetrace.base.source import display_path

B, T, H, d, S, V = 5, 7, 11, 13, 17, 19
C = H * d
ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # file paths in diagnostics are relative to the working directory


def diagnose(call):
    """The diagnostic for the exception ``call`` raises (it must raise)."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - any exception, that is the point
        return annotation_diagnostic(exc)
    raise AssertionError("the call did not raise")


def def_line(fn) -> int:
    """The line of ``def`` (below the decorators) of a function, as annotation_diagnostic reports."""
    lines, start = inspect.getsourcelines(inspect.unwrap(fn))
    return start + next(i for i, text in enumerate(lines) if text.lstrip().startswith("def "))


def line_below() -> int:
    return inspect.currentframe().f_back.f_lineno + 1


# Wrong width -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,init", [
    pytest.param(rm.Head, {"n_embd": C, "head_size": d}, id="head"),
    pytest.param(rm.MultiHeadAttention, {"n_embd": C, "n_head": H, "block_size": 23}, id="mha-split"),
    pytest.param(rm.SDPAttention, {"n_embd": C, "n_head": H}, id="mha-sdpa"),
    pytest.param(rm.Block, {"n_embd": C, "n_head": H, "block_size": 23}, id="block"),
])
def test_wrong_width_names_argument_dim_and_sizes(cls, init):
    model = cls(**init)
    line = line_below()
    diag = diagnose(lambda: model(torch.randn(B, T, 29)))
    assert isinstance(diag, Diagnostic)
    assert (diag.rule, diag.severity, diag.code) == ("annotation-mismatch", "error", "ST014")
    assert diag.message == "x: dim C is 29, expected 143 as set by n_embd"
    assert diag.data["argument"] == "x"
    assert (diag.data["dim"], diag.data["got"], diag.data["expected"]) == ("C", 29, 143)
    assert diag.data["shape"] == [B, T, 29]
    assert diag.op == f"{cls.__name__}.forward"
    assert "n_embd=143" in diag.hint
    # at the caller, relative to the working directory
    assert (diag.file, diag.line) == (display_path(str(HERE)), line)
    assert not os.path.isabs(diag.file)
    # and the annotated def is named too
    source = Path(inspect.getsourcefile(cls)).relative_to(ROOT)
    assert diag.data["def_site"] == f"{source}:{def_line(cls.forward)}"


def test_wrong_width_of_a_second_argument_names_it():
    model = rm.CrossAttention(C, H)
    diag = diagnose(lambda: model(torch.randn(B, T, C), torch.randn(B, S, 29)))
    assert diag.message == "context: dim C is 29, expected 143 as set by n_embd"


def test_a_dim_bound_by_an_earlier_argument_says_which():
    model = rm.CrossAttention(C, H)
    diag = diagnose(lambda: model(torch.randn(B, T, C), torch.randn(B + 1, S, C)))
    assert diag.message == "context: dim B is 6, expected 5 as set by x"
    assert "context and x must agree on B" in diag.hint


def test_a_wrong_width_deep_inside_a_model_points_at_the_inner_call():
    block = rm.Block(C, H, 23)
    block.attn = rm.FusedQKVAttention(2 * C, H, 23)  # built for the wrong width
    diag = diagnose(lambda: block(torch.randn(B, T, C)))
    assert diag.message == "x: dim C is 143, expected 286 as set by n_embd"
    assert diag.op == "FusedQKVAttention.forward"
    source = Path(inspect.getsourcefile(rm.Block)).relative_to(ROOT)
    call = next(i for i, text in enumerate(Path(source).read_text().splitlines(), 1)
                if "self.attn(self.ln_1(x))" in text)
    assert (diag.file, diag.line) == (str(source), call)


# Wrong rank, dtype, type -----------------------------------------------------------------------


def test_wrong_rank_names_the_axes():
    model = rm.MultiHeadAttention(C, H, 23)
    diag = diagnose(lambda: model(torch.randn(T, C)))
    assert diag.message == "x: got 2 axes (7, 143), expected 3 (B, T, C)"
    assert (diag.data["got"], diag.data["expected"]) == (2, 3)
    assert "unsqueeze(0)" in diag.hint


def test_too_many_axes():
    model = rm.Head(C, d)
    diag = diagnose(lambda: model(torch.randn(2, B, T, C)))
    assert diag.message == "x: got 4 axes (2, 5, 7, 143), expected 3 (B, T, C)"
    assert "remove the extra axis" in diag.hint


def test_wrong_dtype():
    gpt = rm.GPT(V, 23, 1, H, C)
    diag = diagnose(lambda: gpt(torch.randn(B, T)))
    assert diag.message == "idx: dtype float32, expected an Int tensor (B, T)"
    assert ".long()" in diag.hint


def test_not_a_tensor():
    model = rm.Head(C, d)
    diag = diagnose(lambda: model([[1.0, 2.0]]))
    assert diag.message.startswith("x: got [[1.0, 2.0]], expected Float[Tensor, 'B T C={self.n_embd}']")


def test_a_plain_type_hint():
    diag = diagnose(lambda: rm.split_heads(torch.randn(B, T, C), "11"))
    assert diag.message == "n_head: got str, expected int"
    assert diag.op == "split_heads"


# Return values and dims within one argument ----------------------------------------------------


@jaxtyped(typechecker=beartype)
def _wrong_split(x: Float[Tensor, "B T C"], n_head: int) -> Float[Tensor, "B H={n_head} T d=C//{n_head}"]:
    B, T, C = x.shape
    return x.view(B, T, C // n_head, n_head).transpose(1, 2)  # H and d swapped


@jaxtyped(typechecker=beartype)
def _slices(x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
    return x[..., :3]


@jaxtyped(typechecker=beartype)
def _masked(scores: Float[Tensor, "B T T"], mask: Bool[Tensor, "T T"]) -> Float[Tensor, "B T T"]:
    return scores.masked_fill(~mask, float("-inf"))


def test_wrong_return_points_at_the_def_line():
    diag = diagnose(lambda: _wrong_split(torch.randn(B, T, C), H))
    assert diag.message == "return value: dim H is 13, expected 11 as set by n_head"
    assert diag.data["argument"] == "return"
    assert (diag.file, diag.line) == (display_path(str(HERE)), def_line(_wrong_split))
    assert "(5, 13, 7, 11)" in diag.hint


def test_wrong_return_names_the_argument_that_set_the_dim():
    diag = diagnose(lambda: _slices(torch.randn(B, T, C)))
    assert diag.message == "return value: dim C is 3, expected 143 as set by x"


def test_a_dim_repeated_within_one_argument():
    diag = diagnose(lambda: _masked(torch.randn(B, T, T), torch.ones(T, T + 1, dtype=torch.bool)))
    assert diag.message == "mask: dim T is 8, expected 7 as set by scores"


def test_a_square_annotation():
    diag = diagnose(lambda: _square(torch.ones(T, T + 1, dtype=torch.bool)))
    assert diag.message == "mask: dim T is 8, expected 7 as set by axis 0 of mask"


@jaxtyped(typechecker=beartype)
def _square(mask: Bool[Tensor, "T T"]) -> None:
    return None


# Other checkers and texts ----------------------------------------------------------------------


class _PlainBeartype(torch.nn.Module):
    @beartype
    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        return x


def test_plain_beartype_violation():
    diag = diagnose(lambda: _PlainBeartype()(torch.randn(B, T)))
    assert diag.message == "x: got 2 axes, expected 3 (B, T, C)"
    assert diag.op == "_PlainBeartype.forward"


def test_without_the_typechecker_stack_the_reason_is_worked_out():
    # jaxtyping can drop beartype's part of the chain (JAXTYPING_REMOVE_TYPECHECKER_STACK);
    # then only its own text is left.
    text = (
        "Type-check error whilst checking the parameters of demo.Attention.forward.\n"
        "The problem arose whilst typechecking parameter 'context'.\n"
        "Actual value: f32[5,17,29](torch)\n"
        "Expected type: <class 'Float[Tensor, 'B S C']'>.\n"
        "----------------------\n"
        "Called with parameters: {'self': Attention(...), 'x': f32[5,7,143](torch), "
        "'context': f32[5,17,29](torch)}\n"
        "Parameter annotations: (self, x: Float[Tensor, 'B T C'], context: Float[Tensor, 'B S C']) -> Any.\n"
        "The current values for each jaxtyping axis annotation are as follows.\n"
        "B=5\nT=7\nC=143\n"
    )
    diag = annotation_diagnostic(jaxtyping.TypeCheckError(text))
    assert diag.message == "context: dim C is 29, expected 143 as set by x"
    assert diag.op == "Attention.forward"
    assert diag.file is None  # no traceback, no importable function: no location to invent


def test_json_ready():
    model = rm.Head(C, d)
    diag = diagnose(lambda: model(torch.randn(B, T, 29)))
    out = diag.to_json()
    assert out["rule"] == "annotation-mismatch" and out["data"]["dim"] == "C"


# Not ours ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    pytest.param(lambda: 1 / 0, id="zero-division"),
    pytest.param(lambda: torch.randn(2, 3) @ torch.randn(2, 3), id="torch-matmul"),
    pytest.param(lambda: torch.randn(2, 6).view(4, 4), id="torch-view"),
    pytest.param(lambda: rm.Head(C, d)(torch.randn(B, T, C)).view(-1, 4), id="after-a-checked-call"),
    pytest.param(lambda: (_ for _ in ()).throw(TypeError("x must be a tensor")), id="plain-type-error"),
])
def test_other_exceptions_give_none(make):
    try:
        make()
    except Exception as exc:  # noqa: BLE001
        assert not is_annotation_violation(exc)
        assert annotation_diagnostic(exc) is None
    else:
        raise AssertionError("the call did not raise")


def test_a_malformed_annotation_is_not_a_violation():
    @jaxtyped(typechecker=beartype)
    def f(x: Float[Tensor, "B {missing}"]):
        return x

    with pytest.raises(Exception) as info:
        f(torch.randn(2, 3))
    assert annotation_diagnostic(info.value) is None


# --- the style corpus (tests/data/styles/annotated.py) ------------------------------------------

def test_optional_annotation_names_the_dim():
    """``Optional[Bool[Tensor, "*#batch #q k"]]``: beartype's reason for a union names no dim; the
    message is worked out from the shape and the dims bound so far."""
    annotated = style_corpus.load(style_corpus.STYLES / "annotated.py", "annotations")
    report, found = style_corpus.assert_found_once(annotated.MaskOfTheWrongLength)
    assert found.message == "mask: dim q is 8, expected 7 as set by q", style_corpus.show(report)
    assert "<class" not in found.message + found.hint
    assert "q is (*batch, q, d)" in found.hint  # a variadic axis shown with its star
