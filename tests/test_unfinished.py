"""not-implemented: a forward that is still the starter's is one finding, decided by dataflow,
the same in every run; and the reference comparison names the reference's own lines.

Submissions of a multi-head attention assignment in tests/data/course_mha/students/ (u_*: not
written yet, c_*: correct in several styles), against tests/data/course_mha/solution/mha.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.base.dims import Dims
from shapetrace.drive.reference import compare, resolve_reference
from shapetrace.drive.targets import resolve_targets

ROOT = Path(__file__).resolve().parent / "data" / "course_mha"
SOLUTION = "solution/mha.py::MultiHeadAttention"
INIT = {"embed_dim": "C", "num_heads": "H", "dropout": 0.0}


@pytest.fixture(autouse=True)
def _in_course(monkeypatch):
    monkeypatch.chdir(ROOT)


def check(student: str, **settings):
    (target,) = resolve_targets(f"students/{student}.py::MultiHeadAttention", root=ROOT)
    return st.check(target.cls, target=target.display, init=INIT, **settings).targets[0]


def line_of(student: str, text: str) -> int:
    lines = (ROOT / "students" / f"{student}.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.mark.parametrize("student, line_text, words", [
    pytest.param("u_empty", "out = torch.empty", ["torch.empty(B, T, C)", "nothing but sizes"],
                 id="uninitialised"),
    pytest.param("u_zeros", "return torch.zeros_like", ["torch.zeros_like(query)"],
                 id="zeros-like-input"),
    pytest.param("u_input", "return query", ["its input query unchanged"], id="the-input"),
    pytest.param("u_pass", "pass", ["returns None"], id="pass"),
    pytest.param("u_not_implemented", "raise NotImplementedError", ["NotImplementedError"],
                 id="not-implemented-error"),
])
@pytest.mark.parametrize("reference", [None, SOLUTION], ids=["alone", "with-reference"])
def test_an_unfinished_forward_is_one_finding_at_its_line(student, line_text, words, reference):
    result = check(student, reference=reference)
    assert result.error is None, result.error
    found = [(d.rule, d.line) for d in result.diagnostics]
    assert found == [("not-implemented", line_of(student, line_text))], \
        [(d.rule, d.message) for d in result.diagnostics]
    (finding,) = result.diagnostics
    assert finding.severity == "error" and finding.file == f"students/{student}.py"
    for word in words:
        assert word in finding.message
    assert not result.ok


def test_uninitialised_memory_gives_the_same_verdict_every_run():
    """torch.empty holds whatever memory held: the verdict is read from the dataflow."""
    seen = set()
    for seed in range(4):
        result = check("u_empty", reference=SOLUTION, seed=seed)
        seen.add(tuple((d.rule, d.line, d.message) for d in result.diagnostics))
    assert len(seen) == 1 and next(iter(seen))[0][0] == "not-implemented"


@pytest.mark.parametrize("student", ["c_split", "c_einsum", "c_sdpa", "c_fused_kv"])
def test_written_forwards_are_not_unfinished(student):
    result = check(student, reference=SOLUTION)
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]


class _CausalMask(nn.Module):
    """No parameters, returns a constant made from sizes: a mask maker, written as meant."""

    def forward(self, x):
        T = x.shape[1]
        return torch.ones(T, T).tril()


class _Identity(nn.Module):
    def forward(self, x):
        return x


class _Gate(nn.Module):
    """Reads its parameter and returns a constant where the gate is closed: computed."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(4, 4)

    def forward(self, x):
        out = torch.zeros_like(x)
        out[:] = self.scale(x)
        return out


@pytest.mark.parametrize("module", [_CausalMask, _Identity, _Gate])
def test_modules_without_parameters_or_that_read_them_are_never_unfinished(module):
    result = st.check(module, inputs=["x=B,T,4"] if module is _Gate else ["x=B,T,C"]).targets[0]
    assert "not-implemented" not in {d.rule for d in result.diagnostics}


# --- the reference's own lines -------------------------------------------------------------------

class _ZerosAfterProjecting(nn.Module):
    """Projects, then returns a float32 constant: against a float64 reference run."""

    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value, attn_mask=None):
        self.q_proj(query)
        return torch.zeros(query.shape)


def test_a_mismatch_names_the_references_own_output_line():
    """The reference's inputs are copied before it is recorded: no `line None (Tensor.clone)`;
    a value of the student's output made from nothing the reference has is compared with the
    reference's output, at its `return self.out_proj(...)`; a float32 value against float64
    ones is compared, not a dtype error."""
    dims = Dims({"B": 5, "T": 7, "S": 17, "H": 11, "d": 13, "C": 143})
    torch.manual_seed(0)
    model = _ZerosAfterProjecting(143, 11).eval()
    args = [torch.randn(5, 7, 143), torch.randn(5, 17, 143), torch.randn(5, 17, 143)]
    reference = resolve_reference(SOLUTION, root=ROOT)
    found, notes, why = compare(model, args, reference, init={"embed_dim": 143, "num_heads": 11},
                                dims=dims, seed=0, student="zeros")
    assert why is None
    (finding,) = found
    out_line = next(i for i, line in enumerate(
        (ROOT / "solution" / "mha.py").read_text().splitlines(), 1) if "return self.out_proj" in line)
    assert finding.data["reference_line"] == out_line, finding.message
    assert finding.data["reference_file"].endswith("solution/mha.py")
    assert "clone" not in finding.message and "line None" not in finding.message


# --- placeholders never read ----------------------------------------------------------------------

MASKED = ["query=B,T,C", "key=B,S,C", "value=B,S,C", "attn_mask=T,S:bool"]


def test_a_placeholder_never_read_is_a_note():
    """`output = torch.zeros_like(query)` left from the starter, the answer computed in other
    names: nothing is lost, the target passes with a note at that line."""
    result = check("c_placeholder", reference=SOLUTION)
    assert result.ok, [(d.rule, d.message) for d in result.diagnostics]
    (note,) = [d for d in result.diagnostics if d.rule == "discarded-result"]
    assert note.severity == "info" and note.line == line_of("c_placeholder", "output = torch.zeros")
    assert "placeholder" in note.message


class _Placeholders(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        empty = torch.empty(x.shape[0], 4)
        fresh = x.new_zeros(x.shape)
        full = torch.full_like(x, 0.5)
        return self.proj(x)


def test_placeholders_of_every_kind_are_notes():
    result = st.check(_Placeholders, inputs=["x=B,4"]).targets[0]
    found = [(d.rule, d.severity) for d in result.diagnostics]
    assert found == [("discarded-result", "info")] * 3, found


def test_dead_computation_stays_an_error():
    """A mask computed and never applied is a lost computation, not a placeholder."""
    result = check("w_mask_unused", inputs=MASKED)
    dead = [d for d in result.diagnostics if d.rule == "discarded-result"]
    assert [(d.severity, d.line) for d in dead] == [
        ("info", line_of("w_mask_unused", "output = torch.zeros")),
        ("error", line_of("w_mask_unused", "masked = scores.masked_fill"))]


# --- cross-attention sizes ------------------------------------------------------------------------

def test_a_reshape_by_the_query_length_fails_when_the_reference_is_a_cross_attention():
    """Keys of a length of their own (S=17 beside T=7), nothing declared: the reference runs
    there, so the student's view by T is the finding, not a reason to re-run at S=T."""
    result = check("w_key_reshape", reference=SOLUTION)
    assert [(d.rule, d.line) for d in result.diagnostics if d.severity == "error"] == [
        ("op-failed", line_of("w_key_reshape", "k = self.k_proj(key).view(B, T"))]
    assert result.dims["S"] == 17


@pytest.mark.parametrize("student", ["c_split", "c_einsum", "c_sdpa", "c_fused_kv"])
def test_correct_cross_attention_runs_at_its_own_key_length(student):
    result = check(student, reference=SOLUTION)
    assert result.ok and result.dims["S"] == 17, [(d.rule, d.message) for d in result.diagnostics]


def test_without_a_reference_keys_are_still_read_at_the_query_length():
    """Nothing says the module is a cross-attention: a module made for self-attention that
    takes keys apart is read at the queries' length, as before (say less, never something
    false)."""
    result = check("w_key_reshape")
    assert result.ok and result.dims["S"] == 7
