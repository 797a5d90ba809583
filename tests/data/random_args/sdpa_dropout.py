"""An SDPA call written over several lines whose dropout ignores the module's mode."""

import torch.nn as nn
import torch.nn.functional as F


class DropoutInEval(nn.Module):
    def __init__(self, dim: int, heads: int, p: float = 0.5):
        super().__init__()
        self.heads = heads
        self.p = p
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        out = F.scaled_dot_product_attention(
            q, k, v,
            dropout_p=self.p,
        )
        return out.transpose(1, 2).reshape(B, T, C)


class DropoutFollowsMode(DropoutInEval):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        out = F.scaled_dot_product_attention(
            q, k, v,
            dropout_p=self.p if self.training else 0.0,
        )
        return out.transpose(1, 2).reshape(B, T, C)
