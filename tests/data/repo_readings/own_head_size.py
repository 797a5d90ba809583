"""An attention whose config may set a head size of its own: when it does not, the code works it
out (``getattr(config, "attention_head_size", hidden // heads)``)."""

import torch.nn as nn
import torch.nn.functional as F


class OwnHeadSizeAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config.num_attention_heads
        own = int(config.hidden_size / config.num_attention_heads)
        self.head_size = getattr(config, "attention_head_size", own)
        self.inner = self.heads * self.head_size
        self.query = nn.Linear(config.hidden_size, self.inner)
        self.key = nn.Linear(config.hidden_size, self.inner)
        self.value = nn.Linear(config.hidden_size, self.inner)
        self.out = nn.Linear(self.inner, config.hidden_size)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = (p(x).view(B, T, self.heads, self.head_size).transpose(1, 2)
                   for p in (self.query, self.key, self.value))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, self.inner))
