import torch

x = torch.rand((2, 3, 4)) @ torch.rand((2, 4, 5))
y = torch.rand((7, 2, 3, 4)) @ torch.rand((2, 4, 5))
z = torch.rand((7, 2, 3, 4)) @ torch.rand((7, 1, 4, 5))  # pitfall: broadcast batch of 1
w = torch.rand((7, 2, 3, 4)).T  # pitfall: reverses all four axes
m = torch.rand((7, 2, 3, 4)).mT
print(x.shape, y.shape, z.shape, w.shape, m.shape)
