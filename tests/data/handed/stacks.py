"""Encoders that hand their padding mask, reshaped on a line of their own, to a stack of layers
they loop over: layers built in a comprehension, copies of one layer, a Sequential of them. The
layers read the mask (True = padding) where they fill the scores. And attention that hands its
mask (True = keep), reshaped in the call, to a method of a submodule or of an object it makes."""

import copy
import math

import torch.nn as nn


class Layer(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x, padding):
        batch, length, width = x.shape
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(self.norm(x)).chunk(3, dim=-1))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(padding, -1e9)
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(batch, length, width)
        return x + self.out(y)


class ComprehensionStack(nn.Module):
    def __init__(self, width, heads, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([Layer(width, heads) for _ in range(depth)])

    def forward(self, x, mask):
        padding = mask.unsqueeze(1).unsqueeze(1)
        for layer in self.layers:
            x = layer(x, padding)
        return x


class CopiedStack(nn.Module):
    def __init__(self, width, heads, depth=2):
        super().__init__()
        one = Layer(width, heads)
        self.layers = nn.ModuleList([copy.deepcopy(one) for _ in range(depth)])

    def forward(self, x, mask):
        padding = mask[:, None, None, :]
        for i, layer in enumerate(self.layers):
            x = layer(x, padding)
        return x


class SequentialStack(nn.Module):
    def __init__(self, width, heads, depth=2):
        super().__init__()
        self.layers = nn.Sequential(*[Layer(width, heads) for _ in range(depth)])

    def forward(self, x, mask):
        padding = mask.view(mask.shape[0], 1, 1, -1)
        for layer in self.layers:
            x = layer(x, padding)
        return x


class MixedStack(nn.Module):
    """Two kinds of layer in one list: which one a loop calls the code does not say."""

    def __init__(self, width, heads):
        super().__init__()
        self.layers = nn.ModuleList([Layer(width, heads), nn.Identity()])

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask) if isinstance(layer, Layer) else layer(x)
        return x


class Scorer(nn.Module):
    """Scores and their mask in a method of its own, not forward."""

    def attend(self, q, k, v, keep):
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~keep, -1e9)
        return scores.softmax(dim=-1) @ v


class MethodOfASubmodule(nn.Module):
    """The mask handed to a method of a submodule (``self.scorer.attend``)."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.scorer = Scorer()

    def forward(self, x, mask):
        batch, length, width = x.shape
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        y = self.scorer.attend(q, k, v, mask[:, None, None, :])
        return y.transpose(1, 2).reshape(batch, length, width)


class MethodOfANewObject(MethodOfASubmodule):
    """The mask handed to a method of an object made on the spot (``Scorer().attend``)."""

    def forward(self, x, mask):
        batch, length, width = x.shape
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        keep = mask[:, None, None, :]
        y = Scorer().attend(q, k, v, keep)
        return y.transpose(1, 2).reshape(batch, length, width)
