import torch
import matplotlib.pyplot as plt

x = torch.randn(4, 8)
plt.plot(x[0])
