import torch.nn as nn

from layers.spectral import SpectralMixer


class Model(nn.Module):
    def __init__(self, configs):
        super().__init__()
        self.mixer = SpectralMixer(in_channels=configs.d_model, out_channels=configs.d_model)

    def forward(self, x):
        return x + self.mixer(x)
