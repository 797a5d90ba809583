import torch.nn as nn

SIZES = {"C": 16}
WIDTH = SIZES["width"]


class Never(nn.Module):
    pass
