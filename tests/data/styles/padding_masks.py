"""Encoders that build their padding mask from the token ids, the right way round and the wrong
way round: a ``masked_fill`` of the padding (boolean and 0/1 masks), ``torch.where`` keeping the
real tokens, ids below zero for padding. The padding id is one past the vocabulary, which no
token of the probe is: the correct ones fill nothing and are quiet; each buggy twin fills every
key of every query, so every weight is 1/keys, and is found by attention-textbook at the line
that built the mask (``# BUG``)."""

import math

import torch
import torch.nn as nn

class _Encoder(nn.Module):
    INIT = {"vocab": "V", "width": "C", "heads": "H"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab, width, heads):
        super().__init__()
        self.heads, self.size, self.pad = heads, width // heads, vocab
        self.embed = nn.Embedding(vocab + 1, width, padding_idx=vocab)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def split(self, x):
        batch, length, _ = x.shape
        return [t.view(batch, length, self.heads, self.size).transpose(1, 2)
                for t in self.qkv(x).chunk(3, dim=-1)]

    def attend(self, q, k, v, scores):
        batch, heads, length, size = v.shape
        y = scores.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(batch, length, heads * size))


class PaddingFilled(_Encoder):
    def forward(self, idx):
        q, k, v = self.split(self.embed(idx))
        padding = (idx == self.pad)[:, None, None, :]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.size)
        return self.attend(q, k, v, scores.masked_fill(padding, -1e9))


class RealTokensFilled(_Encoder):
    BUG = "attention-textbook"

    def forward(self, idx):
        q, k, v = self.split(self.embed(idx))
        real = (idx != self.pad)[:, None, None, :]  # BUG
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.size)
        return self.attend(q, k, v, scores.masked_fill(real, -1e9))


class KeepWhere(_Encoder):
    def forward(self, idx):
        q, k, v = self.split(self.embed(idx))
        keep = idx.ne(self.pad).unsqueeze(1).unsqueeze(2)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.size ** -0.5
        return self.attend(q, k, v, torch.where(keep, scores, torch.finfo(scores.dtype).min))


class KeepWhereSwapped(_Encoder):
    BUG = "attention-textbook"

    def forward(self, idx):
        q, k, v = self.split(self.embed(idx))
        keep = idx.eq(self.pad).unsqueeze(1).unsqueeze(2)  # BUG
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.size ** -0.5
        return self.attend(q, k, v, torch.where(keep, scores, torch.finfo(scores.dtype).min))


class NegativeIdsArePadding(_Encoder):
    def forward(self, idx):
        q, k, v = self.split(self.embed(idx.clamp(min=0)))
        keep = (idx >= 0).float()[:, None, None, :]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.size)
        return self.attend(q, k, v, scores.masked_fill(keep == 0, -torch.finfo(scores.dtype).max))


class NegativeIdsKept(_Encoder):
    BUG = "attention-textbook"

    def forward(self, idx):
        q, k, v = self.split(self.embed(idx.clamp(min=0)))
        keep = (idx < 0).float()[:, None, None, :]  # BUG
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.size)
        return self.attend(q, k, v, scores.masked_fill(keep == 0, -torch.finfo(scores.dtype).max))


class UniformByDesign(_Encoder):
    """Scores that are one value per row before any mask: an average over the tokens, as the
    code means it (nothing to say)."""

    def forward(self, idx):
        q, k, v = self.split(self.embed(idx))
        padding = (idx == self.pad)[:, None, None, :]
        scores = torch.zeros(q.shape[:-1] + (k.shape[-2],))
        return self.attend(q, k, v, scores.masked_fill(padding, -1e9))


class _MaskedAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.size = heads, width // heads
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x, keep):
        batch, length, _ = x.shape
        q, k, v = (t.view(batch, length, self.heads, self.size).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        keep = keep[:, None, None, :]
        scores = (q @ k.transpose(-2, -1)).masked_fill(~keep, -torch.finfo(q.dtype).max)
        weights = (scores / math.sqrt(self.size)).softmax(dim=-1)
        return (weights @ v).transpose(1, 2).reshape(batch, length, -1)


class KeepHandedToLayer(nn.Module):
    """The mask is made from the ids by the model and handed to its attention layer, which
    reshapes it on a line of its own before it fills the scores."""

    INIT = {"vocab": "V", "width": "C", "heads": "H"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab, width, heads):
        super().__init__()
        self.pad = vocab
        self.embed = nn.Embedding(vocab + 1, width, padding_idx=vocab)
        self.attn = _MaskedAttention(width, heads)

    def forward(self, idx):
        keep = idx != self.pad
        return self.attn(self.embed(idx), keep)


class PaddingHandedToLayer(KeepHandedToLayer):
    BUG = "attention-textbook"

    def forward(self, idx):
        keep = idx == self.pad  # BUG
        return self.attn(self.embed(idx), keep)
