"""Module-level sizes whose head size is not n_embd // n_head: they cannot be set to H*d."""

import torch.nn as nn
import torch.nn.functional as F

n_embd = 32
n_head = 4
head_size = 16  # two heads' worth: a choice of the author, kept as it is


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * n_head * head_size)
        self.out = nn.Linear(n_head * head_size, n_embd)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, n_head, head_size).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, n_head * head_size))
