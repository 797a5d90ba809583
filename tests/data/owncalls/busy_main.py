"""A main block that does what training scripts do: writes files where it runs, tries the
network, trains for a long time and writes a file at the end."""

import os
import socket

import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self, layers: list):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(layers, layers[1:]))

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


if __name__ == "__main__":
    with open("written_before.txt", "w") as handle:
        handle.write("a file the main block writes where it runs\n")
    try:
        socket.create_connection(("example.com", 80), timeout=1)
        reached = "reached the network"
    except OSError as exc:
        reached = str(exc)
    mark = os.environ.get("OWNCALLS_MARK")
    if mark:
        with open(mark + ".network", "w") as handle:
            handle.write(reached)
    model = Scorer([12, 24, 6])
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10 ** 7):
        loss = model(torch.randn(8, 12)).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    if mark:
        with open(mark, "w") as handle:
            handle.write("the training loop ran to its end\n")
