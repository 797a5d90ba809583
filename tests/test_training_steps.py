"""A whole training run under ``st.trace``: repeated steps counted, not kept; a step of a new kind
(the last, smaller batch; an eval step; a step of gradient accumulation) recorded and checked;
the run's NaN and Inf found with their step and the op that made them."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import shapetrace as st


class TinyAttention(nn.Module):
    def __init__(self, n_embd: int = 16, n_head: int = 2, bug: str | None = None):
        super().__init__()
        self.n_head, self.bug = n_head, bug
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        if self.bug == "jumble":  # every step, every batch
            q, k, v = (t.reshape(B, self.n_head, T, C // self.n_head) for t in (q, k, v))
        else:
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
        if self.bug == "late" and B == 1:  # the last, smaller batch runs another branch
            att = att.softmax(dim=-2)
        else:
            att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 11, n_embd: int = 16, n_head: int = 2, bug: str | None = None):
        super().__init__()
        self.n_embd, self.n_head = n_embd, n_head
        self.embed = nn.Embedding(vocab, n_embd)
        self.norm = nn.LayerNorm(n_embd)
        self.attn = TinyAttention(n_embd, n_head, bug)
        self.head = nn.Linear(n_embd, vocab)

    def forward(self, idx, targets=None):
        x = self.embed(idx)
        x = x + self.attn(self.norm(x))
        logits = self.head(x)
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def _batches(n: int, batch: int = 3, T: int = 6, vocab: int = 11, total: int | None = None):
    """``n`` batches; with ``total``, epochs of ``total`` samples (10 in threes: 3, 3, 3, 1)."""
    g = torch.Generator().manual_seed(0)
    sizes = [batch]
    if total is not None:
        sizes = [batch] * (total // batch) + ([total % batch] if total % batch else [])
    for i in range(n):
        b = sizes[i % len(sizes)]
        yield torch.randint(0, vocab, (b, T), generator=g), torch.randint(0, vocab, (b, T), generator=g)


def _train(model, steps: int, *, lr: float = 1e-2, **batches):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for x, y in _batches(steps, **batches):
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return opt


def _traced(model, steps: int, **options):
    torch.manual_seed(0)
    with st.trace(model) as t:
        _train(model, steps, **options)
    return t


# --- repeated steps ------------------------------------------------------------------------------

def test_repeated_steps_are_counted_not_kept():
    torch.manual_seed(0)
    short = _traced(TinyLM(), 6)
    torch.manual_seed(0)
    long = _traced(TinyLM(), 120)
    assert long.step_count == 120
    # the first step (its optimizer makes its state) and the steps after it: two kinds
    assert [(run.first, run.count, run.last) for run in long.steps] == [(1, 1, 1), (2, 119, 120)]
    assert len(long.records) == len(short.records)  # flat: a kind is kept once
    assert long.diagnostics == []


def test_every_step_keeps_every_step():
    torch.manual_seed(0)
    model = TinyLM()
    with st.trace(model, every_step=True) as t:
        _train(model, 5)
    assert t.steps == [] and t.step_count == 0
    assert sum(r.op.endswith("softmax") for r in t.records) == 5


def test_steps_fold_in_the_printed_trace():
    t = _traced(TinyLM(), 30)
    text = _printed(t)
    assert "┌ step 1" in text and "┌ x 29 steps, 2 to 30" in text
    assert text.count("Tensor.softmax") == 2  # once per kept step


def test_last_smaller_batch_is_its_own_kind_and_checked():
    """10 samples in batches of 3: 3, 3, 3, 1. The batch of one runs a branch with a bug."""
    torch.manual_seed(0)
    model = TinyLM(bug="late")
    t = _traced(model, 8, total=10)  # two epochs: 3, 3, 3, 1, 3, 3, 3, 1
    kinds = {(run.first, run.count) for run in t.steps}
    assert (4, 2) in kinds  # the batch of one, at steps 4 and 8
    assert sum(run.count for run in t.steps) == 8
    (found,) = [d for d in t.diagnostics if d.rule == "softmax-axis"]
    assert found.message.startswith("at step 4: ") and found.data["step"] == 4


def test_a_bug_in_every_kind_of_step_is_one_finding_counted_once():
    single = _traced(TinyLM(bug="jumble"), 1)
    run = _traced(TinyLM(bug="jumble"), 8, total=10)
    assert len(run.steps) >= 3
    (once,) = single.diagnostics
    (found,) = run.diagnostics
    assert (found.rule, found.count, found.lines, found.message) \
        == (once.rule, once.count, once.lines, once.message)
    assert found.data["step"] == 1


def test_eval_steps_between_training_steps_are_their_own_kind():
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    evaluation = next(_batches(1))[0]
    with st.trace(model) as t:
        for i, (x, y) in enumerate(_batches(40)):
            model.train()
            _, loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 10 == 9:
                model.eval()
                with torch.no_grad():
                    model(evaluation)
    assert t.step_count == 44
    counts = sorted(run.count for run in t.steps)
    assert sum(counts) == 44 and len(counts) <= 5
    assert t.diagnostics == []


def test_gradient_accumulation():
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with st.trace(model) as t:
        for i, (x, y) in enumerate(_batches(24)):
            _, loss = model(x, y)
            (loss / 4).backward()
            if i % 4 == 3:
                opt.step()
                opt.zero_grad()
    assert t.step_count == 24
    assert sum(run.count for run in t.steps) == 24
    assert len(t.records) < 6 * sum(r.op.endswith("softmax") for r in t.records) * 40
    assert t.diagnostics == []


def test_a_change_the_step_key_cannot_see_is_found_when_the_step_is_recorded_again():
    """From step 30 the attention takes another branch with the same shapes: the unrecorded
    steps cannot see it, the next recorded one (after ``RECHECK`` of them) does."""
    from shapetrace.record.steps import RECHECK

    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = RECHECK + 20
    with st.trace(model) as t:
        for i, (x, y) in enumerate(_batches(steps)):
            if i == 30:
                model.attn.bug, model.attn.forward = "late", _always_wrong(model.attn)
            _, loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    (found,) = [d for d in t.diagnostics if d.rule == "softmax-axis"]
    assert found.data["step"] > 30
    assert sum(run.count for run in t.steps) == steps


def _always_wrong(attention):
    def forward(x):
        B, T, C = x.shape
        q, k, v = attention.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, attention.n_head, C // attention.n_head).transpose(1, 2)
                   for t in (q, k, v))
        att = (q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))).softmax(dim=-2)
        return attention.proj((att @ v).transpose(1, 2).reshape(B, T, C))
    return forward


def test_a_users_own_mode_inside_the_trace_keeps_every_step_recorded():
    class Counting(TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            Counting.calls += 1
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    model = TinyLM()
    with st.trace(model) as t, Counting():
        _train(model, 12)
    assert t.step_count == 12 and sum(run.count for run in t.steps) == 12
    assert Counting.calls > 0


def test_the_trace_leaves_no_hook_behind():
    from torch.nn.modules import module as nn_module

    before = (len(nn_module._global_forward_pre_hooks), len(nn_module._global_forward_hooks))
    model = TinyLM()
    _traced(model, 20)
    assert (len(nn_module._global_forward_pre_hooks), len(nn_module._global_forward_hooks)) \
        == before
    assert not model._forward_pre_hooks and not model._forward_hooks
    assert torch._C._len_torch_function_stack() == 0


def test_a_compiled_model_trains_under_the_trace():
    torch.manual_seed(0)
    model = TinyLM()
    compiled = torch.compile(model, backend="eager")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    with st.trace(compiled) as t:
        for x, y in _batches(15):
            _, loss = compiled(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert t.step_count == 15 and sum(run.count for run in t.steps) == 15
    assert any("torch.compile" in note for note in t.notes)
    assert t.diagnostics == []


# --- values over the run -------------------------------------------------------------------------

def _blow_up_at(model, step: int, steps: int = 40):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for i, (x, y) in enumerate(_batches(steps), start=1):
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i == step:  # still finite, but q @ k overflows at the next forward
            with torch.no_grad():
                model.attn.qkv.weight.mul_(1e20)


def test_a_late_overflow_is_found_at_its_step_and_its_op():
    torch.manual_seed(0)
    model = TinyLM()
    with st.trace(model) as t:
        _blow_up_at(model, 25)
    (found,) = [d for d in t.diagnostics if d.rule == "non-finite"]
    assert found.op == "@" or found.op.endswith("matmul"), found
    assert "q @ k.transpose(-2, -1)" in _line_of(found)
    assert found.message.startswith("at step 26 ")
    assert "matmul made" in found.message
    assert "The gradients of optimizer step 26 (AdamW.step) held NaN" in found.message
    assert "After optimizer step 26 (AdamW.step) the parameters held NaN" in found.message
    assert [e.kind for e in t.value_events] == ["forward", "gradients", "parameters"]
    assert "attn.qkv.weight" in t.value_events[-1].names
    assert [run.rerun for run in t.steps].count(True) == 1
    # the run goes on as it would have: the same losses as untraced
    torch.manual_seed(0)
    plain = TinyLM()
    _blow_up_at(plain, 25)
    assert all(torch.equal(a, b) or (a.isnan().all() and b.isnan().all())
               for a, b in zip(model.parameters(), plain.parameters()))


def _line_of(d) -> str:
    import linecache

    return linecache.getline(d.file, d.line)


def test_a_nan_loss_outside_the_model_is_found_by_its_gradients():
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with st.trace(model) as t:
        for i, (x, y) in enumerate(_batches(30), start=1):
            logits = model(x)
            probs = logits.softmax(-1)
            if i == 20:
                probs = probs * 0  # log(0): the loss is inf, its gradients NaN
            loss = -probs.log().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    (found,) = [d for d in t.diagnostics if d.rule == "non-finite"]
    assert found.message.startswith("at step 20 the gradients of optimizer step 20 (SGD.step)")
    assert "embed.weight" in found.message


def test_an_overflowing_update_is_found_in_the_parameters():
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with st.trace(model) as t:
        for i, (x, y) in enumerate(_batches(30), start=1):
            if i == 12:
                opt.param_groups[0]["lr"] = float("inf")
            _, loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    (found,) = [d for d in t.diagnostics if d.rule == "non-finite"]
    # the first bad value, at its exact step: the parameters the update of step 12 made
    assert found.message.startswith("after optimizer step 12 (SGD.step) the parameters hold NaN"), \
        found.message
    assert "At step 13 the model's output held NaN" in found.message


def test_a_finite_run_says_nothing_about_values():
    t = _traced(TinyLM(), 40)
    assert t.value_events == [] and t.diagnostics == []


# --- the command line ----------------------------------------------------------------------------

def test_a_training_script_folds_its_steps(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import torch, torch.nn as nn, torch.nn.functional as F
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(10, 6), torch.randint(0, 3, (10,))
        for step in range(300):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    """))
    out = subprocess.run([sys.executable, "-m", "shapetrace", str(script)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "x 299 steps, 2 to 300" in out.stdout or "x 298 steps, 3 to 300" in out.stdout, \
        out.stdout


def _printed(t) -> str:
    import io

    from rich.console import Console

    out = io.StringIO()
    t.print(console=Console(file=out, width=120, color_system=None))
    return out.getvalue()


@pytest.mark.parametrize("steps", [2, 3])
def test_a_short_run_keeps_what_it_ran(steps):
    t = _traced(TinyLM(), steps)
    assert t.step_count == steps and sum(run.count for run in t.steps) == steps


def test_a_forward_that_raises_in_an_unrecorded_step_is_found_at_its_op():
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(IndexError), st.trace(model) as t:
        for i, (x, y) in enumerate(_batches(20), start=1):
            if i == 15:  # the same shapes as every step: an index out of the vocabulary
                x = torch.full_like(x, 50)
            _, loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    (found,) = [d for d in t.diagnostics if d.rule == "op-failed"]
    assert found.message.startswith("at step 15 ") and found.op == "F.embedding"
    assert t.step_count == 15


# --- no value read back in steady state ---------------------------------------------------------

def test_unrecorded_steps_read_no_value_back_to_the_host():
    from shapetrace.record.flags import EVERY, HostReads

    torch.manual_seed(0)
    model = TinyLM()
    steps = EVERY + 10
    t = st.trace(model)
    with HostReads(t) as reads, t:
        _train(model, steps)
    assert t.step_count == steps
    assert sum(run.count for run in t.steps if run.first > 1) >= steps - 2  # mostly unrecorded
    assert reads.steady == 0
    assert reads.other > 0  # the recorded first steps and the reads of the flags
    assert t._watch.flags.reads == 2  # every EVERY steps and at the end
    assert t.value_events == [] and t.diagnostics == []


def test_the_first_bad_step_is_exact_between_two_reads_of_the_flags():
    from shapetrace.record.flags import EVERY

    torch.manual_seed(0)
    model = TinyLM()
    with st.trace(model) as t:
        _blow_up_at(model, EVERY + 7, steps=EVERY + 20)
    assert [(e.kind, e.step) for e in t.value_events] == [
        ("forward", EVERY + 8), ("gradients", EVERY + 8), ("parameters", EVERY + 8)]
    (found,) = [d for d in t.diagnostics if d.rule == "non-finite"]
    assert found.message.startswith(f"at step {EVERY + 8} ")
    assert "matmul made" in found.message
