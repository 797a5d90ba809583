"""A course notebook's cells as a file: plotting set up with a package not installed here, a
download of weights, a dataset from a package not installed here, then the model built and
called with sizes nothing but these cells give."""

import urllib.request

import not_installed_plotting as plt
import not_installed_vision_data as vision
import torch
from torch import nn


class PatchMixer(nn.Module):
    def __init__(self, width: int, mix: int):
        super().__init__()
        self.inner = nn.Linear(width, mix)
        self.outer = nn.Linear(mix, width)

    def forward(self, x):
        return x + self.outer(torch.relu(self.inner(x)))


if __name__ == "__main__":
    plt.set_style("course")
    for name in ["mixer.ckpt"]:
        urllib.request.urlretrieve("https://example.com/weights/" + name, name)
    train_set = vision.Digits(root="data", download=True)
    loader = torch.utils.data.DataLoader(train_set, batch_size=4)
    model = PatchMixer(width=12, mix=20)
    print(model(torch.randn(3, 5, 12)).shape)
