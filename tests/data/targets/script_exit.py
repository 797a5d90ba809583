import sys

import torch.nn as nn


class Model(nn.Module):
    pass


sys.exit(3)
