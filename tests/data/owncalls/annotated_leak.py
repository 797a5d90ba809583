"""A mixer that centres each feature over the batch: one sample's output depends on the others.
Its forward's annotations name the batch axis at the sizes its main block uses."""

import torch
from jaxtyping import Float
from torch import Tensor, nn


class BatchCentred(nn.Module):
    def __init__(self, widths: tuple):
        super().__init__()
        self.proj = nn.Linear(widths[0], widths[1])

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T D"]:
        centred = x - x.mean(dim=0, keepdim=True)
        return self.proj(centred)


if __name__ == "__main__":
    layer = BatchCentred((20, 12))
    print(layer(torch.randn(3, 6, 20)).shape)
