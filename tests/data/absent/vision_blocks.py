"""A file of vision blocks whose helpers come from a layers package that is not installed."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import st_absent_registry as registry
from st_absent_layers.helpers import DropPath, LayerScale, trunc_normal_

#: a constant a registry made while the file loaded
SCALE_TABLE = registry.scales(4)


class Attention(nn.Module):
    """Never touches the missing package."""

    def __init__(self, dim: int, num_heads: int = 8):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Block(nn.Module):
    """Builds a helper of the missing package."""

    def __init__(self, dim: int, num_heads: int = 8, drop_path: float = 0.1):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = Attention(dim, num_heads)
        self.drop_path = DropPath(drop_path)

    def forward(self, x):
        return x + self.drop_path(self.attn(self.norm(x)))


class ScaledBlock(LayerScale):
    """Built on a class of the missing package."""

    def forward(self, x):
        return x


class TableMix(nn.Module):
    """Computes with a value the missing package made."""

    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) * SCALE_TABLE


class Head(nn.Module):
    """Never touches it either."""

    def __init__(self, dim: int, num_classes: int = 10):
        super().__init__()
        self.fc = nn.Linear(dim, num_classes)

    def forward(self, x):
        return F.log_softmax(self.fc(x.mean(dim=1)), dim=-1)


@registry.register_model
def small_model():
    return Block(64)


class ConfiguredHead(nn.Module):
    """Hands its config on to a builder of the missing package."""

    def __init__(self, cfg):
        super().__init__()
        self.body = registry.build_head(cfg)
        self.out = nn.Linear(cfg.width, cfg.width)

    def forward(self, x):
        return self.out(self.body(x))
