"""Inputs whose names say nothing of what they hold, guessed from a module they are handed to
(a table of positions whose forward calls its argument ``input``, read only for its length):
phoneme ids, which an embedding refuses as floats, and mel frames, vectors that no embedding
reads (which must stay vectors)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Positions(nn.Module):
    """Sinusoidal positions for a batch of sequences; only the batch and length are read."""

    def __init__(self, width, longest=64):
        super().__init__()
        steps = torch.arange(longest)[:, None] / 10000 ** (torch.arange(0, width, 2) / width)
        table = torch.zeros(longest, width)
        table[:, 0::2], table[:, 1::2] = torch.sin(steps), torch.cos(steps[:, : width // 2])
        self.register_buffer("table", table)

    def forward(self, input):
        batch, length = input.shape[:2]
        return self.table[:length].unsqueeze(0).expand(batch, length, -1)


class PhonemeEncoder(nn.Module):
    """Phoneme ids (0 pads) embedded, scaled, placed, and attended over the real phonemes."""

    def __init__(self, n_symbols, width, heads):
        super().__init__()
        self.symbols = nn.Embedding(n_symbols, width, padding_idx=0)
        self.scale = math.sqrt(width)
        self.positions = Positions(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm = nn.LayerNorm(width)

    def forward(self, phone_seq):
        pads = phone_seq.eq(0)
        pads[:, 0] = False
        h = self.symbols(phone_seq) * self.scale + self.positions(phone_seq)
        y, _ = self.attn(h, h, h, key_padding_mask=pads, need_weights=False)
        return self.norm(h + y)


class FrameDecoder(nn.Module):
    """Mel frames as vectors, placed the same way: nothing embeds them."""

    def __init__(self, width, heads):
        super().__init__()
        self.prenet = nn.Linear(width, width)
        self.positions = Positions(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.out = nn.Linear(width, width)

    def forward(self, frame_seq):
        h = F.gelu(self.prenet(frame_seq)) + self.positions(frame_seq)
        y, _ = self.attn(h, h, h, need_weights=False)
        return self.out(F.gelu(y))
