from torch import nn

from .layers import linear


class SelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.1, bias=True):
        super().__init__()
        self.proj = linear(embed_dim)
        self.num_heads = num_heads

    def forward(self, x):
        return self.proj(x)


def not_a_class():
    pass
