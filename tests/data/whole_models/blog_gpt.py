"""A blog's generating transformer: blocks of folded-head self-attention with a triu_indices
mask written in place, learned positions expanded over the batch, log-probabilities out."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FoldedSelfAttention(nn.Module):
    def __init__(self, emb, heads=8, mask=False):
        super().__init__()
        self.emb, self.heads, self.mask = emb, heads, mask
        self.tokeys = nn.Linear(emb, emb, bias=False)
        self.toqueries = nn.Linear(emb, emb, bias=False)
        self.tovalues = nn.Linear(emb, emb, bias=False)
        self.unifyheads = nn.Linear(emb, emb)

    def forward(self, x):
        b, t, e = x.size()
        h = self.heads
        s = e // h
        keys = self.tokeys(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        queries = self.toqueries(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        values = self.tovalues(x).view(b, t, h, s).transpose(1, 2).contiguous().view(b * h, t, s)
        queries = queries / (s ** (1 / 4))
        keys = keys / (s ** (1 / 4))
        dot = torch.bmm(queries, keys.transpose(1, 2))
        if self.mask:
            indices = torch.triu_indices(t, t, offset=1)
            dot[:, indices[0], indices[1]] = float("-inf")
        dot = F.softmax(dot, dim=2)
        out = torch.bmm(dot, values).view(b, h, t, s).transpose(1, 2).contiguous().view(b, t, e)
        return self.unifyheads(out)


class TransformerBlock(nn.Module):
    def __init__(self, emb, heads, mask, seq_length, ff_hidden_mult=4, dropout=0.0):
        super().__init__()
        self.attention = FoldedSelfAttention(emb, heads=heads, mask=mask)
        self.norm1 = nn.LayerNorm(emb)
        self.norm2 = nn.LayerNorm(emb)
        self.ff = nn.Sequential(nn.Linear(emb, ff_hidden_mult * emb), nn.ReLU(),
                                nn.Linear(ff_hidden_mult * emb, emb))
        self.do = nn.Dropout(dropout)

    def forward(self, x):
        attended = self.attention(x)
        x = self.norm1(attended + x)
        x = self.do(x)
        fedforward = self.ff(x)
        x = self.norm2(fedforward + x)
        return self.do(x)


class GTransformer(nn.Module):
    def __init__(self, emb, heads, depth, seq_length, num_tokens):
        super().__init__()
        self.num_tokens = num_tokens
        self.token_embedding = nn.Embedding(num_embeddings=num_tokens, embedding_dim=emb)
        self.pos_embedding = nn.Embedding(num_embeddings=seq_length, embedding_dim=emb)
        self.tblocks = nn.Sequential(*[TransformerBlock(emb=emb, heads=heads, seq_length=seq_length,
                                                        mask=True) for _ in range(depth)])
        self.toprobs = nn.Linear(emb, num_tokens)

    def forward(self, x):
        tokens = self.token_embedding(x)
        b, t, e = tokens.size()
        positions = self.pos_embedding(torch.arange(t))[None, :, :].expand(b, t, e)
        x = tokens + positions
        x = self.tblocks(x)
        x = self.toprobs(x.view(b * t, e)).view(b, t, self.num_tokens)
        return F.log_softmax(x, dim=2)
