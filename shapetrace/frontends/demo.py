"""The built-in demo: ``python -m shapetrace`` traces a correct and a buggy attention.

Both modules are the multi-head attention students write from the lecture notes. They differ
in one line: the buggy one reshapes (B, T, C) straight to (B, H, T, d), which keeps every shape
right and deals the tokens of each sample out across the heads.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    """Correct: split the width into heads, then move the heads before time."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.reshape(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.reshape(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class JumbledSelfAttention(nn.Module):
    """Buggy: reshapes (B, T, C) straight to (B, H, T, d). Every shape is right."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(B, self.n_head, T, C // self.n_head)
        k = k.reshape(B, self.n_head, T, C // self.n_head)
        v = v.reshape(B, self.n_head, T, C // self.n_head)
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).reshape(B, T, C)
        return self.proj(y)


TRY = "Try it on your own code:  python -m shapetrace path/to/attention.py"


def report():
    """Both modules checked, as ``python -m shapetrace TARGET`` checks a target."""
    from ..drive.check import check_target
    from ..report.results import Report

    return Report([
        check_target(CausalSelfAttention, target="demo: CausalSelfAttention (correct)"),
        check_target(JumbledSelfAttention, target="demo: JumbledSelfAttention (one line wrong)"),
    ])


def show(console=None) -> int:
    """The demo, printed on ``console`` (the terminal by default)."""
    from ..render import make_console, print_report

    console = console or make_console()
    print_report(report(), console=console)
    console.print(TRY, style="dim")
    return 0


def export(exporter, *, show_trace: bool = True) -> str:
    """The demo as a report file in a format built from results (HTML): the same page as for
    targets."""
    return exporter.export(report(), show_trace=show_trace)
