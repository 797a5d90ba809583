"""``st.trace`` around a user's own run: compiled models, threads, patches made inside the
block."""

from __future__ import annotations

import threading
import warnings

import torch
import torch.nn.functional as F
from torch import nn

import shapetrace as st


class HeadsEqualHeadSize(nn.Module):
    """Eight heads of eight: H = d = 8 at the user's sizes, an output width equal to T."""

    def __init__(self, n_embd: int = 64, n_head: int = 8, out: int = 16):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, out)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = F.softmax(q @ k.transpose(-2, -1) / (k.size(-1) ** 0.5), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))


def test_a_compiled_model_is_traced_eagerly_without_warnings():
    model = HeadsEqualHeadSize()
    compiled = torch.compile(model, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with st.trace(compiled) as t:
            compiled(torch.randn(2, 16, 64))
    ops = [r.op for r in t.records]
    assert "F.softmax" in ops and "Tensor.view" in ops
    assert any("torch.compile" in note for note in t.notes)
    assert not [w for w in caught if "hook" in str(w.message).lower()], [str(w.message) for w in caught]


def test_warnings_route_is_put_back_after_threads():
    before = warnings.showwarning
    model = HeadsEqualHeadSize()
    errors = []

    def run():
        try:
            with st.trace(model):
                model(torch.randn(2, 16, 64))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert warnings.showwarning is before


def test_a_patch_of_softmax_made_inside_the_trace_reaches_multihead_attention(monkeypatch):
    mha = nn.MultiheadAttention(16, 2, batch_first=True)
    calls = []
    real = F.softmax

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    x = torch.randn(2, 5, 16)
    with st.trace(mha):
        monkeypatch.setattr(F, "softmax", counting)
        mha(x, x, x)
    assert calls, "nn.MultiheadAttention's body ignored F.softmax patched inside the trace"


