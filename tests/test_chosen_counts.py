"""A constructor argument nothing names that forward uses as the count a ``topk`` keeps (a
router's experts per token, the keys a sparse attention keeps) is read as 2, by use, in each of
torch's spellings; an argument used otherwise is not."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace as st
from shapetrace.drive.usage import CHOSEN, meaning_by_use


class Router(nn.Module):
    """Sends each token to its best experts (the method spelling, ``x.topk(self.k)``)."""

    def __init__(self, n_embd, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(n_embd, num_experts)

    def forward(self, x):
        weights, picked = self.gate(x).topk(self.top_k, dim=-1)
        return F.softmax(weights, dim=-1), picked


class KeptKeys(nn.Module):
    """Attention over the keys with the highest scores only (``torch.topk(..., k=...)``)."""

    def __init__(self, dim, keep):
        super().__init__()
        self.keep = keep
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        threshold = torch.topk(scores, k=self.keep, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < threshold, float("-inf"))
        return F.softmax(scores, dim=-1) @ v


class Shifted(nn.Module):
    """A count used as a shift, not as topk's: not read as one."""

    def __init__(self, dim, shift):
        super().__init__()
        self.shift = shift
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(torch.roll(x, self.shift, dims=1))


def test_a_count_topk_keeps_is_read_by_use():
    assert meaning_by_use(Router, "top_k") == CHOSEN
    assert meaning_by_use(KeptKeys, "keep") == CHOSEN
    assert meaning_by_use(Shifted, "shift") != CHOSEN


def test_the_router_and_the_sparse_attention_are_checked_with_nothing_declared():
    for cls, name in ((Router, "top_k"), (KeptKeys, "keep")):
        result = st.check(cls).targets[0]
        assert result.error is None, result.error
        assert any(f"{name} read as how many of the largest values topk keeps (2)" in note
                   for note in result.notes), result.notes
        kept = [rec for rec in result.trace.records if rec.op.endswith("topk")]
        assert kept and all(rec.outputs[0].shape[-1] == 2 for rec in kept)
        assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
