"""A student file that prints while it imports, builds and runs."""

import torch.nn as nn

print("loading my attention")


class Noisy(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        print("building", n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        print("x has shape", x.shape)
        return self.proj(x)

