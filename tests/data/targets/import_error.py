import torch.nn as nn

import definitely_not_an_installed_module  # noqa: F401


class Never(nn.Module):
    pass
