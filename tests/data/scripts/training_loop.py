"""A small training loop: model, optimizer, eight steps (correct)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 9), nn.ReLU(), nn.Linear(9, 3))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(10, 6)
y = torch.randint(0, 3, (10,))
for step in range(8):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad(set_to_none=False)
    loss.backward()
    opt.step()
