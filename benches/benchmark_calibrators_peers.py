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
(`--input probs`), as the peers do. `CALIB_FIT_ARGS` adds options to every `calib fit` (e.g.
`--backend wgpu` for calib on a GPU, with a CLI built with `--features wgpu`).

With the Python package installed (`pip install ./crates/calib-py`), a further column times
calib the way the peers are timed: in this process, warm (one untimed fit first), the
estimator's `fit` on the same arrays (the probabilities' logarithm for the scaling methods
included), alternating with the peer's fit round by round; `ratio` is then the peer's time
over that.
"""
import argparse
import logging
import os
import tempfile
import warnings

import numpy as np

# The timing helpers and the data of the binary-map benchmark (this folder).
from binary_maps_peers import best, calib_fit, multiclass_data

warnings.simplefilter("ignore")
logging.disable(logging.INFO)
PROBS = ["--input", "probs"]


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
        _, p, y = multiclass_data(n, k, rng)
        path = os.path.join(tmp, f"{n}x{k}.npz")
        np.savez(path, val_probs=p, val_labels=y)
        sets[(n, k)] = (p, y, path)

    from probmetrics.calibrators import (
        CenteredIsotonicRegressionCalibrator, ETSCalibrator, KernelCalibrator,
        MulticlassOneVsRestCalibrator, SMSCalibrator, SVSCalibrator)

    def BBQ():  # netcal is needed by the BBQ row alone.
        from netcal.binning import BBQ as NetcalBBQ
        return NetcalBBQ()

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
    try:
        import calib
    except ImportError:
        calib = None
    print(f"{'method':8s} {'data':16s} {'reference':44s} {'reference':>10s} {'calib fit':>10s} "
          f"{'ratio':>7s} {'process':>9s}" + (f" {'in process':>11s} {'ratio':>7s}" if calib else ""))
    for name, size, peer, fit, extra in rows:
        if (only and name not in only) or size not in sets:
            continue
        p, y, path = sets[size]
        own = in_process(calib, name, p, y)
        peer_t, own_t = alternate(lambda: fit(p, y), own, args.repeat)
        # calib's kernel fit time includes its record's training NLL: one application to the
        # calibration rows, as the reference's row.
        fit_t, proc_t = calib_fit(name, path, PROBS + extra, args.repeat)
        data = f"{size[0]:,} x {size[1]:,}"
        line = (f"{name:8s} {data:16s} {peer:44s} {peer_t:9.4f}s {fit_t:9.4f}s {peer_t / fit_t:6.1f}x "
                f"{proc_t:8.4f}s")
        if own is not None:
            line += f" {own_t:10.4f}s {peer_t / own_t:6.1f}x"
        print(line, flush=True)


def in_process(calib, name, p, y):
    """calib's fit of `name` in this process (kernel: fit and apply, as the reference's row),
    warmed up once; None without the package."""
    if calib is None:
        return None
    estimator = calib.ESTIMATORS[name]

    def fit():
        fitted = estimator(input="probs").fit(p, y)
        if name == "kernel":
            fitted.predict_proba(p)

    fit()
    return fit


def alternate(peer, own, repeat):
    """Best times of `peer` and `own` (None: not timed), called in turn `repeat` times."""
    times = ([], [])
    for _ in range(repeat):
        times[0].append(best(peer, 1))
        if own is not None:
            times[1].append(best(own, 1))
    return min(times[0]), (min(times[1]) if times[1] else None)


if __name__ == "__main__":
    main()
