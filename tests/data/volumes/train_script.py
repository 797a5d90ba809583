"""A training script with its model at the top level: the data it loads is not here, and the
rest of the script (a log file, the loop) would run the training."""

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, n_embd, head_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)

    def forward(self, x):
        k, q = self.key(x), self.query(x)
        weights = (q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5).softmax(dim=-1)
        return weights @ self.value(x)


shards = torch.load("shapetrace-no-such-shards.pt")
steps = len(shards) * 10

with open("shapetrace-train-log.txt", "w") as log:
    log.write("start\n")


class Classifier(nn.Module):
    def __init__(self, n_embd, classes=3):
        super().__init__()
        self.head = Head(n_embd, n_embd)
        self.out = nn.Linear(n_embd, classes)

    def forward(self, x):
        return self.out(self.head(x).mean(dim=1))


for step in range(steps):
    raise SystemExit("the training loop ran")
