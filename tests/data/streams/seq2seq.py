"""An encoder-decoder whose source and target are as long, written for these tests: the decoder
masks its own self-attention with a triangle and reads the source whole through the
cross-attention."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attend(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.h, self.d = n_heads, d_model // n_heads
        self.q, self.kv = nn.Linear(d_model, d_model), nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, memory, mask=None):
        b, t, c = x.shape
        q = self.q(x).view(b, t, self.h, self.d).transpose(1, 2)
        k, v = (z.view(b, -1, self.h, self.d).transpose(1, 2) for z in self.kv(memory).chunk(2, -1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))


class Seq2Seq(nn.Module):
    def __init__(self, d_model: int, n_heads: int, window: int = 0):
        super().__init__()
        self.window = window
        self.encode = Attend(d_model, n_heads)
        self.self_attn = Attend(d_model, n_heads)
        self.cross = Attend(d_model, n_heads)

    def forward(self, enc_seq, dec_seq):
        memory = enc_seq + self.encode(enc_seq, enc_seq)
        t = dec_seq.shape[1]
        future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1 + self.window)
        y = dec_seq + self.self_attn(dec_seq, dec_seq, future)
        return y + F.gelu(self.cross(y, memory))


class Seq2SeqSeesAhead(Seq2Seq):
    """The decoder's triangle starts one key late: each query sees the next target token."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__(d_model, n_heads, window=1)
