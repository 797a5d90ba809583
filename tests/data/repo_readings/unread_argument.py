"""An encoder whose constructor takes every argument of a shared config, ``out_ch`` among them,
and reads only some: the others can be anything."""

import torch.nn as nn
import torch.nn.functional as F


class SharedConfigEncoder(nn.Module):
    def __init__(self, *, dim, heads, out_ch, dropout=0.0, **ignored):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.drop = dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.drop if self.training else 0.0)
        return y.transpose(1, 2).reshape(B, T, C)
