"""An instance built (and run) under ``torch.inference_mode()``, as a repository's own tests and
generation code build them: checked like any other, and left as it was."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st


class CountingAttention(nn.Module):
    """Causal self-attention that counts its calls in a buffer; ``drop_mask`` loses the mask."""

    def __init__(self, n_embd=32, n_head=4, drop_mask=False):
        super().__init__()
        self.n_head, self.drop_mask = n_head, drop_mask
        self.causal = True
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        B, T, C = x.shape
        self.calls += 1
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal and not self.drop_mask)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


def _built_in_inference_mode(**kwargs):
    with torch.inference_mode():
        model = CountingAttention(**kwargs)
        model(torch.randn(2, 5, 32))
    return model


def test_a_correct_instance_is_checked_and_left_as_it_was():
    model = _built_in_inference_mode()
    weight = model.qkv.weight.clone()
    result = st.check(model, inputs=["x=B,T,C"]).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any("torch.inference_mode()" in n for n in result.notes), result.notes
    assert int(model.calls) == 1 and model.calls.is_inference()
    assert torch.equal(model.qkv.weight, weight) and model.qkv.weight.is_inference()


def test_its_bugs_are_found_by_the_checks_that_run_it_again():
    """The causal-leak check runs the module again and again: an instance of inference
    tensors gets there too."""
    result = st.check(_built_in_inference_mode(drop_mask=True), inputs=["x=B,T,C"]).targets[0]
    assert result.error is None, result.error
    assert "causal-leak" in {d.rule for d in result.diagnostics}, result.diagnostics
