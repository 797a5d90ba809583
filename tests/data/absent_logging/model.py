"""A model that logs through a package this machine does not have, and a block that hands a
tensor to a function of that package."""

import torch.nn as nn

from shapetrace_missing_logger import logger, summarize


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
