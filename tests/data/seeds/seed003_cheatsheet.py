"""Seed 003's tensor cheatsheet, typed in as a script: the two broadcasting pitfalls the notes
warn about run without an error."""
import torch

x = torch.Tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 0, 0]])
B, N = x.shape
x = torch.Tensor([[[1, 2, 3]], [[4, 5, 6]], [[7, 8, 9]], [[0, 0, 0]]])
x = x.squeeze()
x = torch.Tensor([[1, 2, 3], [4, 5, 6]])
y = x[:, None, :]
z = x[:, :, None]
k = x[None, :, None, None, :]
x = torch.Tensor([[[1, 2, 3], [2, 3, 4]]])
y = x.transpose(0, -1)
z = x.transpose(1, 2)

x = torch.rand((2, 3, 4)) @ torch.rand((2, 4, 5))
x = torch.rand((7, 2, 3, 4)) @ torch.rand((7, 2, 4, 5))
x = torch.rand((7, 2, 3, 4)) @ torch.rand((2, 4, 5))
x = torch.rand((7, 2, 3, 4)) @ torch.rand((7, 1, 4, 5))  # BUG: silent-broadcast
x = torch.rand((7, 2, 3, 4)).T  # BUG: reversed-transpose
x = torch.rand((7, 2, 3, 4)).mT
print(x.shape)
