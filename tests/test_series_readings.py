"""Time-series models as their libraries write them, with nothing declared: the series handed
whole to a method that unpacks its sizes (``B, L, M = x_enc.shape`` in ``forecast``), a config
whose patch length is handed to the layer that embeds each patch (a patch's side, not the
width), and each variate's series cut into patches by ``unfold``."""

from __future__ import annotations

import torch.nn as nn

import shapetrace as st
from shapetrace.drive.infer import infer_init, infer_inputs
from shapetrace.base.dims import Dims


class PatchForecaster(nn.Module):
    def __init__(self, configs):
        super().__init__()
        self.task_name = configs.task_name
        self.patch_len = configs.patch_len
        self.embed = nn.Linear(configs.patch_len, configs.d_model)
        layer = nn.TransformerEncoderLayer(configs.d_model, configs.n_heads, configs.d_ff,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, configs.e_layers, enable_nested_tensor=False)
        self.head = nn.Linear(configs.d_model, configs.patch_len)

    def forecast(self, x_enc, x_mark_enc):
        B, L, M = x_enc.shape
        means = x_enc.mean(1, keepdim=True).detach()
        series = (x_enc - means).permute(0, 2, 1)  # (B, M, L)
        patches = series.unfold(dimension=-1, size=self.patch_len, step=self.patch_len)
        tokens = self.embed(patches.reshape(B * M, patches.shape[2], self.patch_len))
        out = self.head(self.encoder(tokens)).reshape(B, M, -1).transpose(1, 2)
        return out + means

    def forward(self, x_enc, x_mark_enc):
        if self.task_name == "forecast":
            return self.forecast(x_enc, x_mark_enc)
        return None


def test_a_series_handed_to_a_method_that_unpacks_it_is_read_there():
    series = infer_inputs(PatchForecaster, Dims())[0]
    assert series.name == "x_enc" and series.dims == ("B", "T", "C")


def test_a_patch_length_is_a_patch_side_not_the_width():
    config = infer_init(PatchForecaster, Dims())["configs"]
    assert config.patch_len < Dims()["T"], vars(config)
    result = st.check(PatchForecaster).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
