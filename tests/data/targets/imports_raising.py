import torch.nn as nn

import raising_helper  # noqa: F401


class Never(nn.Module):
    pass
