"""Smooth ECE, calib against relplot 1.0.3, side by side in one run.

Run from the repository root after `cargo build --release -p calib-cli`:
    python3 benches/smooth_ece_peers.py [--n 1000000]
Scores uniform on [0, 1], outcomes Bernoulli(score) (seeded); calib is timed through
`calib eval --metrics smece` (load, pairs and sort included), relplot's `smECE` on arrays
already in memory.
"""
import argparse, os, subprocess, tempfile, time
import numpy as np
from relplot.metrics import smECE

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1_000_000)
n = ap.parse_args().n
rng = np.random.default_rng(1)
s = rng.uniform(size=n)
y = (rng.uniform(size=n) < s).astype(np.int64)
with tempfile.TemporaryDirectory() as d:
    np.save(os.path.join(d, "s.npy"), s)
    np.save(os.path.join(d, "y.npy"), y)
    t = time.perf_counter()
    ref = smECE(s, y.astype(float))
    t_ref = time.perf_counter() - t
    cmd = ["target/release/calib", "eval", os.path.join(d, "s.npy"), "--labels",
           os.path.join(d, "y.npy"), "--input", "probs", "--metrics", "smece", "--format", "csv"]
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    t_calib = time.perf_counter() - t
print(f"n={n}: relplot {t_ref:.2f} s ({ref:.7f}), calib {t_calib:.2f} s ({out.split()[-1]}), "
      f"relplot/calib = {t_ref / t_calib:.2f}")
