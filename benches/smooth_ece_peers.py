"""Smooth ECE, calib against relplot 1.0.3, side by side in one run.

Run from the repository root after `cargo build --release -p calib-cli`:
    python3 benches/smooth_ece_peers.py [--n 1000000] [--repeat 5]
Scores uniform on [0, 1], outcomes Bernoulli(score) (seeded). Each round times relplot's
`smECE` on arrays already in memory, then the whole `calib --trace eval --metrics smece`
process (load, pairs and sort included) and, from its trace, calib's `evaluate` step alone (the
in-process time, as relplot's is); the best of the rounds and the range are printed.
"""
import argparse, os, re, subprocess, tempfile, time
import numpy as np
from relplot.metrics import smECE

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1_000_000)
ap.add_argument("--repeat", type=int, default=5)
args = ap.parse_args()
n = args.n
rng = np.random.default_rng(1)
s = rng.uniform(size=n)
y = (rng.uniform(size=n) < s).astype(np.int64)
ref_times, process_times, evaluate_times = [], [], []
with tempfile.TemporaryDirectory() as d:
    np.save(os.path.join(d, "s.npy"), s)
    np.save(os.path.join(d, "y.npy"), y)
    cmd = ["target/release/calib", "--trace", "eval", os.path.join(d, "s.npy"), "--labels",
           os.path.join(d, "y.npy"), "--input", "probs", "--metrics", "smece", "--format", "csv"]
    for _ in range(args.repeat):
        t = time.perf_counter()
        ref = smECE(s, y.astype(float))
        ref_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        run = subprocess.run(cmd, check=True, capture_output=True, text=True)
        process_times.append(time.perf_counter() - t)
        step = re.search(r"trace: evaluate: ([0-9.]+) s wall", run.stderr)
        evaluate_times.append(float(step.group(1)))
value = run.stdout.split()[-1].split(",")[-1]


def spread(times):
    return f"{min(times):.4f} s (to {max(times):.4f})"


print(f"n={n}, best of {args.repeat}: relplot {spread(ref_times)} = {ref:.7f}; "
      f"calib process {spread(process_times)}, evaluate step {spread(evaluate_times)} = "
      f"{float(value):.7f}; relplot / calib: process {min(ref_times) / min(process_times):.2f}, "
      f"in process {min(ref_times) / min(evaluate_times):.2f}")
