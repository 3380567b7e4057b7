#!/usr/bin/env python3
"""torch.func's per-example gradients on the GPU, for bench_cuda's comparison (issue 13): the same
MLP 784-128-10 (relu, softmax cross-entropy), B = 4096, float32, median of 5 timed runs after a warm-up.
Prints "torch.func vmap(grad), MLP 784-128-10, B=4096: <ms> ms", then torch's figures for bench_cuda's
other rows as peers (eager PyTorch: x * a + b is two launches there)."""
import statistics
import time

import torch
from torch.func import grad, vmap

B, D, H, C = 4096, 784, 128, 10
dev = "cuda"
torch.manual_seed(1)
params = (torch.randn(H, D, device=dev) * 0.05, torch.zeros(H, device=dev), torch.randn(C, H, device=dev) * 0.1,
          torch.zeros(C, device=dev))
x = torch.randn(B, D, device=dev)
y = (torch.arange(B, device=dev) * 7 + 3) % C


def loss(w1, b1, w2, b2, x, y):
    h = torch.relu(torch.nn.functional.linear(x, w1, b1))
    return torch.nn.functional.cross_entropy(torch.nn.functional.linear(h, w2, b2), y)


per_example = vmap(grad(loss, argnums=(0, 1, 2, 3)), in_dims=(None, None, None, None, 0, 0))
per_example(*params, x, y)
torch.cuda.synchronize()
times = []
for _ in range(5):
    t0 = time.perf_counter()
    per_example(*params, x, y)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
print(f"torch.func vmap(grad), MLP 784-128-10, B=4096: {statistics.median(times) * 1e3:.3f} ms")


def median_s(reps, f):
    f()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


n = 1 << 28
v = torch.ones(n, device=dev)
s = median_s(10, lambda: v * 2.0 + 1.0)
print(f"torch x * a + b, 2^28 f32 (two launches): {8 * n / s / 1e12:.3f} TB/s effective")
m = torch.ones(16384, 16384, device=dev)
s = median_s(10, lambda: m.sum(1))
print(f"torch row sums, 16384 x 16384 f32: {4 * m.numel() / s / 1e12:.3f} TB/s")
a1, b1 = torch.ones(1, device=dev), torch.ones(1, device=dev)
s = median_s(200, lambda: a1 + b1)
print(f"torch add of 1 element, launch to completion: {s * 1e6:.3f} us")
