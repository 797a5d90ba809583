import torch.nn as nn

import broken_syntax  # noqa: F401
