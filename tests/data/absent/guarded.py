"""A file that imports the missing package only when it can, and falls back."""

import torch.nn as nn

try:
    import st_absent_layers
except ImportError:
    st_absent_layers = None


class Mlp(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.fast = st_absent_layers is not None

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())
