import torch

name = input("your name: ")
x = torch.randn(2, 3)
print(name, x.sum())
