"""The reliability curve on 1,000 grid points as a dense tensor product in numpy (the G x N
kernel matrix in chunks of grid points, scores reflected at 0 and 1, Gaussian, Silverman's
bandwidth): the baseline that `cargo bench --bench curve` is compared with in
docs/benchmarks.md. Same design as the bench: N uniform scores, Bernoulli(s^1.3) outcomes.

    python3 benches/curve_numpy.py [--n 1000000]
"""
import argparse
import time

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=1_000_000)
n = parser.parse_args().n
rng = np.random.default_rng(1)
s = rng.uniform(size=n)
y = (rng.uniform(size=n) < s**1.3).astype(np.float64)

start = time.perf_counter()
iqr = np.subtract(*np.percentile(s, [75, 25]))
h = 0.9 * min(s.std(ddof=1), iqr / 1.34) * n ** -0.2
grid = np.linspace(0, 1, 1000)
images = np.concatenate([s, -s, 2 - s])
outcomes = np.concatenate([y, y, y])
rc = np.empty_like(grid)
for lo in range(0, grid.size, 8):
    w = np.exp(-0.5 * ((grid[lo : lo + 8, None] - images[None, :]) / h) ** 2)
    rc[lo : lo + 8] = (w @ outcomes) / w.sum(axis=1)
print(f"N = {n}: numpy dense G x N curve {time.perf_counter() - start:.2f} s, h = {h:.5f}, RC(0.5) = {rc[500]:.6f}")
