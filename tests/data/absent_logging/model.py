"""A model that logs through a package this machine does not have, a block that hands a
tensor to a function of that package in its forward, and one whose constructor initialises a
weight through it."""

import torch
import torch.nn as nn

from shapetrace_missing_logger import logger, summarize, trunc_normal_


class Logged(nn.Module):
    def __init__(self, d_model, n_layers=2):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(d_model, d_model) for _ in range(n_layers)])
        logger.debug(f"built with {n_layers} layers of width {d_model}")

    def forward(self, x):
        logger.info("forward")
        return self.layers(x)


class Summarized(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.fc = nn.Linear(d_model, d_model)

    def forward(self, x):
        y = self.fc(x)
        summarize(y)  # the package could change y in place: no verdict without it
        return y


class Initialised(nn.Module):
    """Its constructor initialises a weight through the missing package."""

    def __init__(self, d_model):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(1, 64, d_model))
        self.fc = nn.Linear(d_model, d_model)
        trunc_normal_(self.pos, std=0.02)

    def forward(self, x):
        return self.fc(x + self.pos[:, : x.shape[1]])
