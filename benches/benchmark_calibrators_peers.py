"""Fit times of calib's benchmark-winning calibrators against probmetrics and netcal, side by
side in one run (docs/benchmarks.md, "Calibrators of current benchmarks").

Run from the repository root after `cargo build --release -p calib-cli` (or with
`CALIB_BIN=path/to/calib`):
    python3 benches/benchmark_calibrators_peers.py [--quick] [--only sms,svs,...]
Needs numpy, probmetrics (torch, numba, pytorch-minimize), cir-model and netcal (pip; never in
CI). Data: seeded synthetic overconfident probabilities (f64) written to a temporary folder;
each fit is timed on the same arrays, `--repeat` times (best): the library's fit call in
Python, and calib's own fit time from its record (`wall_time_s`: the fit alone) plus the whole
`calib fit` process (reading the file included). Every calib fit gets the probabilities
(`--input probs`), as the peers do.
"""
import argparse
import json
import logging
import os
import subprocess
import tempfile
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")
logging.disable(logging.INFO)
CALIB = os.environ.get("CALIB_BIN", os.path.join("target", "release", "calib"))


def best(f, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def calib_fit(method, path, extra, repeat):
    fits, procs = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run([CALIB, "fit", method, path, "-o", os.devnull, "--format", "json",
                              "--quiet", "--input", "probs", *extra],
                             capture_output=True, text=True, check=True)
        procs.append(time.perf_counter() - t0)
        fits.append(json.loads(out.stdout)["wall_time_s"])
    return min(fits), min(procs)


def multiclass_data(n, k, rng):
    z = rng.normal(0, 1, (n, k)).astype(np.float32)
    y = rng.integers(0, k, n)
    z[np.arange(n), y] += 2.5
    z *= 1.8  # overconfident
    e = np.exp(z - z.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)).astype(np.float64), y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the 50,000 x 1,000 rows")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated row names (default all)")
    args = ap.parse_args()
    only = [o.strip() for o in args.only.split(",") if o.strip()]
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp()
    sets = {}
    sizes = [(5_000, 100), (10_000, 10)] + ([] if args.quick else [(50_000, 1_000)])
    for n, k in sizes:
        p, y = multiclass_data(n, k, rng)
        path = os.path.join(tmp, f"{n}x{k}.npz")
        np.savez(path, val_probs=p, val_labels=y)
        sets[(n, k)] = (p, y, path)

    from probmetrics.calibrators import (
        CenteredIsotonicRegressionCalibrator, ETSCalibrator, KernelCalibrator,
        MulticlassOneVsRestCalibrator, SMSCalibrator, SVSCalibrator)
    from netcal.binning import BBQ

    rows = [
        ("sms", (5_000, 100), "probmetrics SMSCalibrator", lambda p, y: SMSCalibrator().fit(p, y), []),
        ("svs", (5_000, 100), "probmetrics SVSCalibrator", lambda p, y: SVSCalibrator().fit(p, y), []),
        ("sms", (50_000, 1_000), "probmetrics SMSCalibrator", lambda p, y: SMSCalibrator().fit(p, y), []),
        ("svs", (50_000, 1_000), "probmetrics SVSCalibrator", lambda p, y: SVSCalibrator().fit(p, y), []),
        ("ets", (10_000, 10), "probmetrics ETSCalibrator", lambda p, y: ETSCalibrator().fit(p, y), []),
        ("cir", (10_000, 10), "probmetrics CIR one-vs-rest",
         lambda p, y: MulticlassOneVsRestCalibrator(CenteredIsotonicRegressionCalibrator()).fit(p, y), []),
        ("bbq", (10_000, 10), "netcal 1.4 BBQ (one-vs-rest)", lambda p, y: BBQ().fit(p, y), []),
        # Kernel calibration's work is in applying it: fit + predict on the calibration rows.
        ("kernel", (10_000, 10), "probmetrics KernelCalibrator (fit + apply)",
         lambda p, y: KernelCalibrator().fit(p, y).predict_proba(p), []),
    ]
    print(f"{'method':8s} {'data':16s} {'reference':44s} {'reference':>10s} {'calib fit':>10s} "
          f"{'ratio':>7s} {'process':>9s}")
    for name, size, peer, fit, extra in rows:
        if (only and name not in only) or size not in sets:
            continue
        p, y, path = sets[size]
        peer_t = best(lambda: fit(p, y), args.repeat)
        # calib's kernel fit time includes its record's training NLL: one application to the
        # calibration rows, as the reference's row.
        fit_t, proc_t = calib_fit(name, path, extra, args.repeat)
        data = f"{size[0]:,} x {size[1]:,}"
        print(f"{name:8s} {data:16s} {peer:44s} {peer_t:9.3f}s {fit_t:9.3f}s {peer_t / fit_t:6.1f}x "
              f"{proc_t:8.3f}s", flush=True)


if __name__ == "__main__":
    main()
