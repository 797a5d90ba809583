"""Seed 003's cheatsheet: broadcasting that runs without an error but is not what was meant."""
import torch

B, N, D = 6, 3, 4

pred = torch.rand((B, 1))
target = torch.rand((B,))
loss = ((pred - target) ** 2).mean()  # BUG: silent-broadcast, (B, 1) - (B,) is (B, B)

x = torch.rand((B, N, D)) @ torch.rand((B, D, 5))  # fine: the same leading axes
y = torch.rand((N, D)).T  # fine: .T on a 2-D tensor
print(loss.item(), x.shape, y.shape)
