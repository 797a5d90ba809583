import torch.nn as nn

import definitely_not_an_installed_module  # noqa: F401

if definitely_not_an_installed_module.enabled:  # the top level needs it: no import without it
    Norm = nn.LayerNorm


class Never(nn.Module):
    pass
