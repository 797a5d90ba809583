from torch import nn

from sibling_helpers import make_proj


class Projection(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.proj = make_proj(n_embd)

    def forward(self, x):
        return self.proj(x)
