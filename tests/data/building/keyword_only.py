"""An attention whose forward takes only keyword arguments, time-first (seq, batch, width), with
a buggy twin that scales by the width."""

import math, torch, torch.nn as nn

class KeywordAttention(nn.Module):
    def __init__(self, heads: int, d_model: int):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, *, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask=None):
        seq_len, batch_size, _ = query.shape
        q = self.query(query).view(seq_len, batch_size, self.heads, self.d_k)
        k = self.key(key).view(key.shape[0], batch_size, self.heads, self.d_k)
        v = self.value(value).view(value.shape[0], batch_size, self.heads, self.d_k)
        scores = torch.einsum("ibhd,jbhd->ijbh", q, k) / math.sqrt(self.d_k)
        attn = scores.softmax(dim=1)
        x = torch.einsum("ijbh,jbhd->ibhd", attn, v)
        return self.output(x.reshape(seq_len, batch_size, -1))


class KeywordAttentionBuggy(KeywordAttention):
    def forward(self, *, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask=None):
        seq_len, batch_size, width = query.shape
        q = self.query(query).view(seq_len, batch_size, self.heads, self.d_k)
        k = self.key(key).view(key.shape[0], batch_size, self.heads, self.d_k)
        v = self.value(value).view(value.shape[0], batch_size, self.heads, self.d_k)
        scores = torch.einsum("ibhd,jbhd->ijbh", q, k) / math.sqrt(width)  # BUG
        attn = scores.softmax(dim=1)
        x = torch.einsum("ijbh,jbhd->ibhd", attn, v)
        return self.output(x.reshape(seq_len, batch_size, -1))
