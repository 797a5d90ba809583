"""Seed 000's walk-through in numpy, as the notes write it (correct; no tensor ops to trace)."""
import numpy as np

np.random.seed(1)
B, T, C = 2, 9, 4
x = np.random.normal(size=(B, T, C))

m = 8
wk = np.random.normal(size=(C, m))
K = np.matmul(x, wk)
wq = np.random.normal(size=(C, m))
Q = np.matmul(x, wq)
z = np.einsum('bjm,bim->bji', Q, K)


def softmax(z, axis=-1):
    exp_z = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return exp_z / np.sum(exp_z, axis=axis, keepdims=True)


upper_tri_indices = np.triu_indices(z.shape[1], k=1)
for i in range(z.shape[0]):
    z[i][upper_tri_indices] = -np.inf
wv = np.random.normal(size=(C, m))
print((softmax(z / np.sqrt(m)) @ np.matmul(x, wv)).shape)
