"""Fit times of calib's binary-map calibrators against their reference libraries, side by side
in one run (docs/benchmarks.md, "Binary maps").

Run from the repository root after `cargo build --release -p calib-cli`:
    python3 benches/binary_maps_peers.py [--quick]
Needs numpy, scikit-learn, betacal, mapie, uncertainty-calibration and ml_insights (pip; never
in CI). Data: seeded synthetic scores written to a temporary folder; each fit is timed once
(best of `--repeat`, default 1) on the same arrays: the library's fit call in Python, and
calib's own fit time from its record (`wall_time_s`: the fit alone, as the Python side) plus the
whole `calib fit` process (reading the file included).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")
CALIB = os.environ.get("CALIB_BIN", os.path.join("target", "release", "calib"))
PROBS = ["--input", "probs"]
# Options added to every `calib fit` (e.g. `--backend wgpu`).
EXTRA = os.environ.get("CALIB_FIT_ARGS", "").split()


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
                              "--quiet", *extra, *EXTRA], capture_output=True, text=True, check=True)
        procs.append(time.perf_counter() - t0)
        fits.append(json.loads(out.stdout)["wall_time_s"])
    return min(fits), min(procs)


def binary_data(n, rng):
    z = rng.normal(0, 2, n)
    s = 1 / (1 + np.exp(-z))
    y = (rng.random(n) < 1 / (1 + np.exp(-0.6 * z))).astype(np.int64)
    return s, y


def multiclass_data(n, k, rng):
    z = rng.normal(0, 1, (n, k)).astype(np.float32)
    y = rng.integers(0, k, n)
    z[np.arange(n), y] += 2.5
    z *= 1.8  # overconfident
    e = np.exp(z - z.max(1, keepdims=True))
    return z, (e / e.sum(1, keepdims=True)).astype(np.float64), y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="100,000 binary scores, 5,000 x 100")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-spline", action="store_true", help="skip the (slow) spline rows")
    ap.add_argument("--only", default="", help="comma-separated row names to run (default all)")
    ap.add_argument("--sample-classes", type=int, default=10,
                    help="classes the slow per-class peers fit (their time is scaled to all K)")
    args = ap.parse_args()
    only = [o.strip() for o in args.only.split(",") if o.strip()]

    def wanted(name):
        return not only or name in only
    rng = np.random.default_rng(0)
    n_bin, (n_mc, k_mc) = (100_000, (5_000, 100)) if args.quick else (1_000_000, (50_000, 1_000))
    tmp = tempfile.mkdtemp()
    s, y = binary_data(n_bin, rng)
    bpath = os.path.join(tmp, "binary.npz")
    np.savez(bpath, val_probs=s, val_labels=y, test_probs=s, test_labels=y)
    _, p, yk = multiclass_data(n_mc, k_mc, rng)
    # The peers get probabilities, so calib gets the same (f64, `--input probs`).
    mpath = os.path.join(tmp, "multiclass.npz")
    np.savez(mpath, val_probs=p, val_labels=yk)
    rows = []

    def row(name, size, peer, peer_time, method, path, extra):
        """`peer_time`: a function timing the reference (only called for wanted rows)."""
        if not wanted(name):
            return
        peer_t = peer_time()
        fit, proc = calib_fit(method, path, extra, args.repeat)
        rows.append((name, size, peer, peer_t, fit, proc))
        print(f"{name:28s} {size:14s} {peer:40s} {peer_t:9.3f} s  calib fit {fit:8.3f} s "
              f"(process {proc:7.3f} s)  {peer_t / fit:7.1f}x", flush=True)

    def timed(f):
        return lambda: best(f, args.repeat)

    b = f"{n_bin:,} binary"
    from sklearn.isotonic import IsotonicRegression
    row("isotonic", b, "sklearn IsotonicRegression",
        timed(lambda: IsotonicRegression(out_of_bounds="clip").fit(s, y)), "isotonic", bpath, PROBS)
    from betacal import BetaCalibration
    row("beta (abm)", b, "betacal 1.1.0", timed(lambda: BetaCalibration("abm").fit(s, y)),
        "beta", bpath, PROBS)
    import calibration as uc
    row("scaling-binning", b, "uncertainty-calibration 0.1.4",
        timed(lambda: uc.PlattBinnerCalibrator(n_bin, 15).train_calibration(s, y)),
        "scaling-binning", bpath, PROBS)
    from sklearn.calibration import _SigmoidCalibration
    lo = np.log(np.clip(s, 1e-12, 1 - 1e-12) / (1 - np.clip(s, 1e-12, 1 - 1e-12)))
    row("platt", b, "sklearn _SigmoidCalibration", timed(lambda: _SigmoidCalibration().fit(lo, y)),
        "platt", bpath, PROBS)
    from mapie._venn_abers import VennAbers
    two = np.stack([1 - s, s], 1)
    row("venn-abers", b, "MAPIE 1.6 VennAbers", timed(lambda: VennAbers().fit(two, y)),
        "venn-abers", bpath, PROBS)
    if not args.no_spline:
        from ml_insights import SplineCalib
        row("spline", b, "ml_insights 1.1.0 SplineCalib", timed(lambda: SplineCalib().fit(s, y)),
            "spline", bpath, PROBS)

    m = f"{n_mc:,} x {k_mc:,}"
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    class Stored(ClassifierMixin, BaseEstimator):
        def __init__(self, probs):
            self.probs = probs

        def fit(self, X, y):
            self.classes_ = np.arange(self.probs.shape[1])
            return self

        def predict_proba(self, X):
            return self.probs[X[:, 0]]

        def predict(self, X):
            return self.predict_proba(X).argmax(1)

    X = np.arange(n_mc)[:, None]
    est = FrozenEstimator(Stored(p).fit(X, yk))
    row("isotonic one-vs-rest", m, "sklearn CalibratedClassifierCV",
        timed(lambda: CalibratedClassifierCV(est, method="isotonic").fit(X, yk)),
        "isotonic", mpath, PROBS)
    row("platt one-vs-rest", m, "sklearn CalibratedClassifierCV (sigmoid)",
        timed(lambda: CalibratedClassifierCV(est, method="sigmoid").fit(X, yk)),
        "platt", mpath, PROBS)
    from mapie.calibration import TopLabelCalibrator
    row("top-label (isotonic)", m, "MAPIE 1.6 TopLabelCalibrator",
        timed(lambda: TopLabelCalibrator(Stored(p).fit(X, yk), "isotonic", cv="prefit").fit(X, yk)),
        "top-label", mpath, PROBS)
    row("scaling-binning marginal", m, "uncertainty-calibration 0.1.4",
        timed(lambda: uc.PlattBinnerMarginalCalibrator(n_mc, 15).train_calibration(p, yk)),
        "scaling-binning", mpath, PROBS)
    row("histogram one-vs-rest", m, "uncertainty-calibration (marginal, mass)",
        timed(lambda: uc.HistogramMarginalCalibrator(n_mc, 15).train_calibration(p, yk)),
        "histogram", mpath, PROBS + ["--strategy", "mass", "--bins", "15"])
    row("beta one-vs-rest", m, "betacal 1.1.0, a fit per class",
        timed(lambda: [BetaCalibration("abm").fit(p[:, c], yk == c) for c in range(k_mc)]),
        "beta", mpath, PROBS)

    # Peers too slow to run on every class: timed on the first `--sample-classes` classes,
    # scaled to K.
    few = min(args.sample_classes, k_mc)
    scale = k_mc / few

    def sampled(fit_one):
        return lambda: best(lambda: [fit_one(c) for c in range(few)], args.repeat) * scale

    row("venn-abers one-vs-rest", m, f"MAPIE 1.6 VennAbers per class (x{scale:g})",
        sampled(lambda c: VennAbers().fit(np.stack([1 - p[:, c], p[:, c]], 1), yk == c)),
        "venn-abers", mpath, PROBS)
    if not args.no_spline:
        row("spline one-vs-rest", m, f"ml_insights SplineCalib per class (x{scale:g})",
            sampled(lambda c: SplineCalib().fit(p[:, c], (yk == c).astype(int))),
            "spline", mpath, PROBS)


if __name__ == "__main__":
    sys.exit(main())
