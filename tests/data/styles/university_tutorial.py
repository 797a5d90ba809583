"""A university tutorial's style: a free ``scaled_dot_product`` function filling ``mask == 0``
with -9e15, ``expand_mask`` to 4-D, and a multi-head class with one fused ``qkv_proj`` whose
output is reshaped per head as [q|k|v] before chunking."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    attn_logits = torch.matmul(q, k.transpose(-2, -1))
    attn_logits = attn_logits / math.sqrt(d_k)
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention


def expand_mask(mask):
    assert mask.ndim >= 2, "Mask must be at least 2-dimensional with seq_length x seq_length"
    if mask.ndim == 3:
        mask = mask.unsqueeze(1)
    while mask.ndim < 4:
        mask = mask.unsqueeze(0)
    return mask


class UvAMultiheadAttention(nn.Module):
    INIT = {"input_dim": "C", "embed_dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, input_dim, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv_proj = nn.Linear(input_dim, 3 * embed_dim)
        self.o_proj = nn.Linear(embed_dim, embed_dim)
        self._reset_parameters()

    def _reset_parameters(self):
        nn.init.xavier_uniform_(self.qkv_proj.weight)
        self.qkv_proj.bias.data.fill_(0)
        nn.init.xavier_uniform_(self.o_proj.weight)
        self.o_proj.bias.data.fill_(0)

    def forward(self, x, mask=None, return_attention=False):
        batch_size, seq_length, _ = x.size()
        if mask is not None:
            mask = expand_mask(mask)
        qkv = self.qkv_proj(x)
        qkv = qkv.reshape(batch_size, seq_length, self.num_heads, 3 * self.head_dim)
        qkv = qkv.permute(0, 2, 1, 3)
        q, k, v = qkv.chunk(3, dim=-1)
        values, attention = scaled_dot_product(q, k, v, mask=mask)
        values = values.permute(0, 2, 1, 3)
        values = values.reshape(batch_size, seq_length, self.embed_dim)
        o = self.o_proj(values)
        if return_attention:
            return o, attention
        return o


class UvAMaskedMultihead(UvAMultiheadAttention):
    """Called with a causal (T, T) mask of ones below the diagonal."""

    INPUTS = ["x=B,T,C"]

    def forward(self, x):
        T = x.size(1)
        mask = torch.tril(torch.ones(T, T))
        return super().forward(x, mask=mask)


class UvAEncoderBlock(nn.Module):
    INIT = {"input_dim": "C", "num_heads": "H", "dim_feedforward": 32, "dropout": 0.0}
    INPUTS = ["x=B,T,C"]

    def __init__(self, input_dim, num_heads, dim_feedforward, dropout=0.0):
        super().__init__()
        self.self_attn = UvAMultiheadAttention(input_dim, input_dim, num_heads)
        self.linear_net = nn.Sequential(
            nn.Linear(input_dim, dim_feedforward), nn.Dropout(dropout), nn.ReLU(inplace=True),
            nn.Linear(dim_feedforward, input_dim))
        self.norm1 = nn.LayerNorm(input_dim)
        self.norm2 = nn.LayerNorm(input_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        attn_out = self.self_attn(x, mask=mask)
        x = x + self.dropout(attn_out)
        x = self.norm1(x)
        linear_out = self.linear_net(x)
        x = x + self.dropout(linear_out)
        x = self.norm2(x)
        return x


class UvAPositionalEncoding(nn.Module):
    INIT = {"d_model": "C", "max_len": 64}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
        pe = pe.unsqueeze(0)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)]
        return x


# --- buggy twins ------------------------------------------------------------------------------

class UvAChunkBeforeReshapeWrongly(UvAMultiheadAttention):
    BUG = "softmax-axis"

    def forward(self, x):
        batch_size, seq_length, _ = x.size()
        qkv = self.qkv_proj(x).reshape(batch_size, seq_length, self.num_heads, 3 * self.head_dim)
        q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)
        logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        attention = F.softmax(logits, dim=-2)  # BUG
        values = torch.matmul(attention, v).permute(0, 2, 1, 3)
        return self.o_proj(values.reshape(batch_size, seq_length, self.embed_dim))


class UvAMergeWithoutPermute(UvAMultiheadAttention):
    BUG = "reshape-jumble"

    def forward(self, x):
        batch_size, seq_length, _ = x.size()
        qkv = self.qkv_proj(x).reshape(batch_size, seq_length, self.num_heads, 3 * self.head_dim)
        q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)
        values, _ = scaled_dot_product(q, k, v)
        values = values.reshape(batch_size, seq_length, self.embed_dim)  # BUG
        return self.o_proj(values)


class UvAScaledByEmbedDim(UvAMultiheadAttention):
    BUG = "attention-scale"

    def forward(self, x):
        batch_size, seq_length, _ = x.size()
        qkv = self.qkv_proj(x).reshape(batch_size, seq_length, self.num_heads, 3 * self.head_dim)
        q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)
        logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.embed_dim)  # BUG
        attention = F.softmax(logits, dim=-1)
        values = torch.matmul(attention, v).permute(0, 2, 1, 3)
        return self.o_proj(values.reshape(batch_size, seq_length, self.embed_dim))
