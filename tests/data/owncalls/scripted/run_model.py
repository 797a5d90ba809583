import torch
from torch import nn

from model import Wrapped

block = Wrapped(nn.Sequential(nn.Linear(18, 36), nn.GELU(), nn.Linear(36, 18)), 18)
print(block(torch.randn(2, 5, 18)).shape)
