"""Forward inputs and constructor values read where the code hands them on."""

import torch
import torch.nn as nn


def attend(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / query.shape[-1] ** 0.5
    if mask is not None:
        scores = torch.masked_fill(scores, mask, -1e9)
    return scores.softmax(-1) @ value


class OneHead(nn.Module):
    def __init__(self, dim_model, dim_head):
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(dim_model, dim_head) for _ in range(3))

    def forward(self, query, key, value, mask=None):
        return attend(self.q(query), self.k(key), self.v(value), mask)


class Heads(nn.Module):
    def __init__(self, num_heads, dim_model):
        super().__init__()
        self.heads = nn.ModuleList(OneHead(dim_model, dim_model // num_heads) for _ in range(num_heads))
        self.out = nn.Linear(dim_model, dim_model)

    def forward(self, query, key, value, mask=None):
        return self.out(torch.cat([head(query, key, value, mask) for head in self.heads], dim=-1))


class DecoderLayer(nn.Module):
    """Its input named for what it is to the layer, handed on as queries, keys and values."""

    def __init__(self, num_heads, dim_model):
        super().__init__()
        self.self_attn = Heads(num_heads, dim_model)
        self.norm = nn.LayerNorm(dim_model)

    def forward(self, dec_inp, mask=None):
        return self.norm(dec_inp + self.self_attn(dec_inp, dec_inp, dec_inp, mask))


class Decoder(nn.Module):
    """Its input copied before the layers; its mask handed four calls down before it is used."""

    def __init__(self, num_heads, dim_model, num_layers, vocab_len):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(num_heads, dim_model) for _ in range(num_layers))
        self.to_vocab = nn.Linear(dim_model, vocab_len)

    def forward(self, target_seq, mask):
        out = target_seq.clone()
        for layer in self.layers:
            out = layer(out, mask)
        return self.to_vocab(out)


class RelativeTable(nn.Module):
    """A table of relative positions, one way or the other as the flag says; nothing sets it."""

    def __init__(self, dim_model, causal):
        super().__init__()
        self.causal = causal
        self.proj = nn.Linear(dim_model, dim_model)

    def forward(self, x):
        T = x.shape[1]
        pos = torch.arange(T)
        rel = (pos[None, :] - pos[:, None]).float()
        if self.causal:
            rel = rel.clamp(max=0)
        return self.proj(x) + rel.mean(-1, keepdim=True)


class RowAttention(nn.Module):
    """Attention along each row of a grid of tokens laid out (rows, cols, batch, width)."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)

    def forward(self, x):
        num_rows, num_cols, batch_size, embed_dim = x.size()
        head = embed_dim // self.num_heads
        q, k, v = self.qkv(x).view(num_rows, num_cols, batch_size, 3, self.num_heads, head).unbind(3)
        scores = torch.einsum("rcbhd,rkbhd->rbhck", q, k) / head ** 0.5
        out = torch.einsum("rbhck,rkbhd->rcbhd", scores.softmax(-1), v)
        return out.reshape(num_rows, num_cols, batch_size, embed_dim)


class ConfiguredFFN(nn.Module):
    """A config handed in under a name Python mangles (``__C`` -> ``_ConfiguredFFN__C``), its
    fields written in capitals."""

    def __init__(self, __C):
        super().__init__()
        self.__C = __C
        self.up = nn.Linear(__C.HIDDEN_SIZE, __C.FF_SIZE)
        self.down = nn.Linear(__C.FF_SIZE, __C.HIDDEN_SIZE)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class StridedQueries(nn.Module):
    """Queries kept at every stride-th position, keys and values at every position."""

    def __init__(self, dim_model, stride):
        super().__init__()
        self.stride = stride
        self.q, self.k, self.v = (nn.Linear(dim_model, dim_model) for _ in range(3))

    def forward(self, x):
        q = self.q(x[:, ::self.stride])
        return attend(q, self.k(x), self.v(x))


class StrideHandedOn(nn.Module):
    """A stride a convolution takes: a size of its own, not a slice's step."""

    def __init__(self, dim_model, stride):
        super().__init__()
        self.stride = stride
        self.conv = nn.Conv1d(dim_model, dim_model, 3, stride=stride, padding=1)

    def forward(self, x):
        return self.conv(x.transpose(1, 2)).transpose(1, 2)[:, ::self.stride]
