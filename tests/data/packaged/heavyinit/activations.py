import torch


def squared_relu(x):
    return torch.relu(x) ** 2
