"""A base class whose forward its subclasses implement, as abc would have it."""

import torch.nn as nn


class Backbone(nn.Module):
    def forward(self, x):
        """Map features to features."""
        raise NotImplementedError("Subclasses must implement the forward method.")


class MlpBackbone(Backbone):
    def __init__(self, dim: int):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x).relu()
