"""Seed 001, method 1: the average of previous tokens with two loops (correct)."""
import torch

torch.manual_seed(1337)
B, T, C = 4, 8, 2
x = torch.randn(B, T, C)

xbow = torch.zeros((B, T, C))
for b in range(B):
    for t in range(T):
        xprev = x[b, :t + 1]  # (t, C)
        xbow[b, t] = torch.mean(xprev, 0)

# method 2: a lower-triangular matrix of weights
wei = torch.tril(torch.ones(T, T))
wei = wei / wei.sum(1, keepdim=True)
xbow2 = wei @ x  # (T, T) @ (B, T, C) -> (B, T, C)

# method 3: -inf above the diagonal, then softmax
tril = torch.tril(torch.ones(T, T))
wei = torch.zeros((T, T))
wei = wei.masked_fill(tril == 0, float("-inf"))
wei = torch.nn.functional.softmax(wei, dim=-1)
xbow3 = wei @ x
print(torch.allclose(xbow, xbow2, atol=1e-6), torch.allclose(xbow2, xbow3, atol=1e-6))
