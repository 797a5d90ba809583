"""The module a course collects its chapter's code into, with the transformer taken sequence
first (the chapter's notebook develops a batch-first version of the same class)."""

import torch.nn as nn


class Wrapper(nn.Module):
    def __init__(self, transformer, n_features):
        super().__init__()
        width = transformer.d_model
        self.transf = transformer
        self.embed = nn.Linear(n_features, width)
        self.head = nn.Linear(width, n_features)

    def forward(self, x):
        source, target = x[:, :3], x[:, 3:]
        src = self.embed(source).permute(1, 0, 2)  # the transformer takes (L, N, F)
        tgt = self.embed(target).permute(1, 0, 2)
        return self.head(self.transf(src, tgt).permute(1, 0, 2))
