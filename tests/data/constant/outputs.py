"""Outputs made from the inputs that no input moves (input-ignored), and outputs made from
parameters, tables or shapes alone, zero-initialised layers and codebook lookups that are not."""
import torch
from torch import nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        n, t, c = x.shape
        q, k, v = (z.view(n, t, self.heads, -1).transpose(1, 2) for z in self.qkv(self.norm(x)).chunk(3, -1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.out(y.transpose(1, 2).reshape(n, t, c))
        return x + self.ff(x)


class CausalDocEncoder(nn.Module):
    def __init__(self, dim, heads, depth=2):
        super().__init__()
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.blocks = nn.Sequential(*[Block(dim, heads, True) for _ in range(depth)])

    def forward(self, x):
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.blocks(x)
        return x, x[:, 0]  # the first position


class DocEncoder(CausalDocEncoder):
    def __init__(self, dim, heads, depth=2):
        super().__init__(dim, heads, depth)
        self.blocks = nn.Sequential(*[Block(dim, heads, False) for _ in range(depth)])


class CausalLastToken(CausalDocEncoder):
    def forward(self, x):
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.blocks(x)
        return x, x[:, -1]


class WithTable(nn.Module):
    def __init__(self, dim, max_len=64):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(max_len, dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        pos = self.pos[: x.shape[1]].expand_as(x)
        return self.proj(x), pos, torch.zeros_like(x)


class ZeroConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.zero = nn.Linear(dim, dim)
        nn.init.zeros_(self.zero.weight)
        nn.init.zeros_(self.zero.bias)

    def forward(self, x):
        h = self.proj(x)
        return h, self.zero(h)


class Quantizer(nn.Module):
    def __init__(self, dim, codes=16):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(codes, dim))

    def forward(self, x):
        d = torch.cdist(x, self.codebook.expand(x.shape[0], -1, -1))
        idx = d.argmin(-1)
        return self.codebook[idx]


class CausalFirstRealToken(CausalDocEncoder):
    """A causal model read at its first real token: it sees that token."""

    def forward(self, x):
        x = self.blocks(x)
        return x, x[:, 0]


class FilledEverywhere(nn.Module):
    """Every value of the pooled vector filled with one number."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        pooled = h.mean(1)
        return h, pooled.masked_fill(torch.ones_like(pooled, dtype=torch.bool), 0.5)  # filled
