"""A script whose matmul fails: the shapes do not line up."""
import torch

a = torch.rand(6, 4)
b = torch.rand(6, 4)
c = a @ b  # BUG: op-failed
