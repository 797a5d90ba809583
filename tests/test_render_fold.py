"""Repeated blocks print once: a 96-layer report stays readable."""

import io

import torch
import torch.nn as nn

import shapetrace
from shapetrace.render import make_console, trace_renderable


class Block(nn.Module):
    def __init__(self, n_embd, jumble=False):
        super().__init__()
        self.fc = nn.Linear(n_embd, n_embd)
        self.jumble = jumble

    def forward(self, x):
        B, T, C = x.shape
        y = self.fc(x)
        if self.jumble:
            y = y.reshape(B, 11, T, 13).reshape(B, T, C)
        return x + y


class Stack(nn.Module):
    def __init__(self, n_layer=5, jumble_at=None):
        super().__init__()
        self.blocks = nn.ModuleList(Block(143, i == jumble_at) for i in range(n_layer))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def render(model, **options):
    x = torch.randn(5, 7, 143)
    with shapetrace.trace(model) as t:
        model(x)
    console = make_console(color=False, width=100, file=io.StringIO(), record=True)
    console.print(trace_renderable(t, width=100, **options))
    return console.export_text()


def test_identical_blocks_fold_into_one_line():
    text = render(Stack(5))
    assert "Stack.blocks.0.fc" in text
    assert "… Stack.blocks.1 to Stack.blocks.4 repeat the ops above (4 blocks)" in text
    assert "Stack.blocks.2.fc" not in text


def test_fold_can_be_turned_off():
    text = render(Stack(5), fold=False)
    assert "Stack.blocks.4.fc" in text and "repeat the ops above" not in text


def test_a_block_with_a_finding_is_shown():
    text = render(Stack(5, jumble_at=3))
    assert "Stack.blocks.3" in text
    assert "✗" in text


def test_two_blocks_are_not_folded():
    text = render(Stack(2))
    assert "Stack.blocks.1.fc" in text and "repeat the ops above" not in text
