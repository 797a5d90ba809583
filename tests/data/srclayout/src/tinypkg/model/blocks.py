"""A module of a src-layout package without __init__.py files, that imports a sibling by the
package's absolute name (``tinypkg.model.parts``), as its project runs it."""

import torch.nn as nn

from tinypkg.model.parts import gated


class GatedMix(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        return gated(self.proj(x))
