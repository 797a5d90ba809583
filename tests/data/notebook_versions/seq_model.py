"""The module a course collects its chapter's code into, with the transformer taken sequence
first (the chapter's notebook develops a batch-first version of the same class)."""

import torch.nn as nn


class Wrapper(nn.Module):
    def __init__(self, transformer, n_features):
        super().__init__()
        self.transf = transformer
        self.proj = nn.Linear(n_features, transformer.d_model)
        self.out = nn.Linear(transformer.d_model, n_features)

    def forward(self, x):
        source, target = x[:, :3], x[:, 3:]
        src = self.proj(source).permute(1, 0, 2)  # the transformer takes (L, N, F)
        tgt = self.proj(target).permute(1, 0, 2)
        return self.out(self.transf(src, tgt).permute(1, 0, 2))
