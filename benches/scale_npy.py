"""Writes the 10,000,000 x 100 f32 logits of docs/scale.md (z.npy, 4.0 GB) and labels (y.npy).

python3 benches/scale_npy.py DIR [N] [K]
Normal logits times 2; 70 % of rows get +4 on the label's logit, the rest on a random class.
"""
import sys

import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else "."
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
k = int(sys.argv[3]) if len(sys.argv) > 3 else 100
rng = np.random.default_rng(0)
z = np.lib.format.open_memmap(f"{out}/z.npy", mode="w+", dtype=np.float32, shape=(n, k))
y = np.empty(n, dtype=np.int64)
step = 200_000
for a in range(0, n, step):
    b = min(n, a + step)
    lab = rng.integers(0, k, b - a)
    logits = rng.normal(0, 1, (b - a, k)).astype(np.float32) * 2
    hit = rng.random(b - a) < 0.7
    pred = np.where(hit, lab, rng.integers(0, k, b - a))
    logits[np.arange(b - a), pred] += 4
    z[a:b] = logits
    y[a:b] = lab
z.flush()
np.save(f"{out}/y.npy", y)
