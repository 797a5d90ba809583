"""An attention whose forward says which axis is which, built from a (width, heads) pair its
main block gives: at the main block's sizes the batch axis is named, so every check runs."""

import torch
from jaxtyping import Float
from torch import Tensor, nn


class AnnotatedPairAttention(nn.Module):
    def __init__(self, shape: tuple):
        super().__init__()
        self.width, self.heads = shape
        self.qkv = nn.Linear(self.width, 3 * self.width)

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        b, n, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        weights = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(dim=-1)
        return (weights @ v).transpose(1, 2).reshape(b, n, c)


if __name__ == "__main__":
    layer = AnnotatedPairAttention((20, 4))
    print(layer(torch.randn(3, 6, 20)).shape)
