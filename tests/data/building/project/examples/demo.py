"""How the project's authors call the table mixer."""

import torch

from mixers.table import TableMixing


def run():
    mixer = TableMixing(32, span=36)
    return mixer(torch.randn(2, 36, 32))
