import torch.nn as nn
from torch.nn import Linear  # imported classes do not count


def attention(q, k, v):
    return (q @ k.transpose(-2, -1)).softmax(-1) @ v
