import sys

import torch

x = torch.randn(2, 3)
sys.exit(1)
