"""Blocks of an image model that take (B, C, H, W) and norm over channels by moving them last;
their linear layers leave initialisation to the model that loads a checkpoint."""

import torch
import torch.nn as nn


class Linear(nn.Linear):
    def reset_parameters(self):  # the weights come from a checkpoint
        return None


class ChannelNorm(nn.LayerNorm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class PixelAttention(nn.Module):
    def __init__(self, c, nhead):
        super().__init__()
        self.attn = nn.MultiheadAttention(c, nhead, bias=True, batch_first=True)

    def forward(self, x, kv):
        shape = x.shape
        x = x.view(x.size(0), x.size(1), -1).permute(0, 2, 1)
        kv = torch.cat([x, kv], dim=1)
        x = self.attn(x, kv, kv, need_weights=False)[0]
        return x.permute(0, 2, 1).view(*shape)


class MixBlock(nn.Module):
    def __init__(self, c, c_cond, nhead):
        super().__init__()
        self.norm = ChannelNorm(c, elementwise_affine=False, eps=1e-6)
        self.attention = PixelAttention(c, nhead)
        self.kv_mapper = nn.Sequential(nn.SiLU(), Linear(c_cond, c))

    def forward(self, x, kv):
        kv = self.kv_mapper(kv)
        return x + self.attention(self.norm(x), kv)


class ChannelMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = ChannelNorm(c, elementwise_affine=False, eps=1e-6)
        self.fc = nn.Sequential(Linear(c, c * 4), nn.GELU(), Linear(c * 4, c))

    def forward(self, x):
        return x + self.fc(self.norm(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
