"""Label queries attending to the tokens of each sample, with a (B, T) attention_mask that is
1 for a real token: one hands SDPA the mask turned the wrong way round, one hands it as it is
(SDPA's bool attn_mask is True where a query may attend), one fills the scores itself."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Labels(nn.Module):
    def __init__(self, dim, heads, labels=3):
        super().__init__()
        self.heads = heads
        self.queries = nn.Parameter(torch.randn(labels, dim))
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def split(self, t):
        b, n, c = t.shape
        return t.view(b, n, self.heads, c // self.heads).transpose(1, 2)

    def merge(self, t):
        b, h, n, d = t.shape
        return self.out(t.transpose(1, 2).reshape(b, n, h * d))

    def attend(self, tokens, allowed):
        k, v = self.kv(tokens).chunk(2, dim=-1)
        q = self.queries.expand(tokens.shape[0], -1, -1)
        y = F.scaled_dot_product_attention(self.split(q), self.split(k), self.split(v),
                                           attn_mask=allowed)
        return self.merge(y)


class LabelsMaskFlipped(_Labels):
    def forward(self, tokens, attention_mask):
        hidden = attention_mask == 0  # meant as "masked out", which SDPA reads as "may attend"
        return self.attend(tokens, hidden[:, None, None, :])


class LabelsMaskKept(_Labels):
    def forward(self, tokens, attention_mask):
        return self.attend(tokens, attention_mask.bool()[:, None, None, :])


class LabelsScoresFilled(_Labels):
    def forward(self, tokens, attention_mask):
        k, v = self.kv(tokens).chunk(2, dim=-1)
        q = self.split(self.queries.expand(tokens.shape[0], -1, -1))
        scores = q @ self.split(k).transpose(-2, -1) / q.shape[-1] ** 0.5
        scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        return self.merge(scores.softmax(dim=-1) @ self.split(v))
