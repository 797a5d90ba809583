"""Attention of a package whose ``__init__`` asks for its own installed version."""

from torch import nn

from . import __version__  # noqa: F401 - the package's own import runs first


class Mixer(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.attend = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        mixed, _ = self.attend(x, x, x, need_weights=False)
        return self.norm(x + mixed)
