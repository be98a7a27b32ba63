"""calib from Python against the Python peers on the same 50,000 x 1,000 float32 logits, side
by side in one process, alternating (docs/benchmarks.md, "From Python").

Run from the repository root with the package installed (`pip install ./crates/calib-py`) and a
release `calib` binary (`cargo build --release -p calib-cli`):
    python3 benches/python_peers.py [--n 50000] [--k 1000] [--repeat 3]
Needs torch, torchmetrics, scikit-learn >= 1.8 and netcal (pip; never in CI).

- The default metric set: `calib.evaluate` against the fastest peer for each metric:
  torchmetrics on the CPU (ECE, MCE, the L2 error, accuracy), torch's cross-entropy (NLL) and
  NumPy (Brier, SCE, ACE, TACE, top-label ECE, debiased L2: the formulas of
  docs/conventions.md, vectorised), all on the same float32 logits, softmax included once.
- Temperature scaling: `calib.TemperatureScaling().fit` against scikit-learn's (what
  `CalibratedClassifierCV(method="temperature")` fits: `sklearn.calibration._TemperatureScaling`)
  and netcal's `TemperatureScaling` (on float64 probabilities, as it takes them: on float32
  ones it returns without fitting, tests/test_peers.py).
- The binding's overhead: `calib.evaluate` against the `evaluate` step of
  `calib eval --trace` on the same arrays written to .npy (its in-process time).
"""
import argparse
import os
import re
import subprocess
import tempfile
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")
CALIB = os.environ.get("CALIB_BIN", os.path.join("target", "release", "calib"))


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    z = rng.standard_normal((n, k), dtype=np.float32) * 2
    z[np.arange(n), y] += 4.0 * rng.random(n, dtype=np.float32) + 1.0  # overconfident-ish
    return np.ascontiguousarray(z), y


def peer_metrics(z, y):
    """The default set by the peers (float32, as a user would run them)."""
    import torch
    import torchmetrics.functional.classification as tmf

    n, k = z.shape
    zt, yt = torch.from_numpy(z), torch.from_numpy(y)
    pt = torch.softmax(zt, dim=1)
    p = pt.numpy()
    out = {
        "ece": tmf.multiclass_calibration_error(pt, yt, k, n_bins=15, norm="l1").item(),
        "mce": tmf.multiclass_calibration_error(pt, yt, k, n_bins=15, norm="max").item(),
        "rmsce": tmf.multiclass_calibration_error(pt, yt, k, n_bins=15, norm="l2").item(),
        "accuracy": tmf.multiclass_accuracy(pt, yt, k, average="micro").item(),
        "nll": torch.nn.functional.cross_entropy(zt, yt).item(),
    }
    onehot = np.zeros_like(p)
    onehot[np.arange(n), y] = 1
    out["brier"] = float(((p - onehot) ** 2).sum(axis=1).mean())
    # SCE: 15 even bins per class.
    b = np.clip(np.ceil(p * 15).astype(np.int64) - 1, 0, 14) + 15 * np.arange(k)
    cnt = np.bincount(b.ravel(), minlength=15 * k)
    gap = np.abs(np.bincount(b.ravel(), (onehot - p).ravel(), minlength=15 * k))
    out["sce"] = float(gap.sum() / (n * k))
    # ACE / TACE: 15 equal-mass ranges per class over the sorted column (TACE: scores > 0.01).
    order = np.argsort(p, axis=0, kind="stable")
    ps, ys = np.take_along_axis(p, order, 0), np.take_along_axis(onehot, order, 0)
    r = (np.arange(n) * 15) // n
    ace = sum(np.abs(ys[r == i].mean(0) - ps[r == i].mean(0)).sum() for i in range(15))
    out["ace"] = float(ace / (15 * k))
    tace = 0.0
    for j in range(k):
        keep = ps[:, j] > 0.01
        m = int(keep.sum())
        if m:
            rr = (np.arange(m) * 15) // m
            pj, yj = ps[keep, j], ys[keep, j]
            tace += sum(abs(yj[rr == i].mean() - pj[rr == i].mean()) for i in range(15) if (rr == i).any())
    out["tace"] = tace / (15 * k)
    # Top-label ECE per predicted class, and the debiased L2 error on 15 equal-mass ranges.
    conf, pred = p.max(1), p.argmax(1)
    hit = (pred == y).astype(np.float64)
    tb = np.clip(np.ceil(conf * 15).astype(np.int64) - 1, 0, 14) + 15 * pred
    tgap = np.abs(np.bincount(tb, hit - conf, minlength=15 * k))
    out["toplabel_ece"] = float(tgap.sum() / n)
    o = np.argsort(conf, kind="stable")
    rr = (np.arange(n) * 15) // n
    cs, hs = conf[o], hit[o]
    terms = []
    for i in range(15):
        c, h = cs[rr == i], hs[rr == i]
        a = h.mean()
        terms.append(len(c) / n * ((c.mean() - a) ** 2 - a * (1 - a) / (len(c) - 1)))
    out["debiased_l2"] = float(np.sqrt(max(0.0, sum(terms))))
    out["plugin_l2"] = out["rmsce"]
    del cnt
    return out


def cli_evaluate_time(z, y):
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "z.npy"), z)
        np.save(os.path.join(d, "y.npy"), y)
        err = subprocess.run([CALIB, "--quiet", "eval", os.path.join(d, "z.npy"), "--labels",
                              os.path.join(d, "y.npy"), "--trace"], capture_output=True, text=True).stderr
    return float(re.search(r"trace: evaluate: ([0-9.]+) s wall", err).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import calib
    import netcal.scaling
    from sklearn.calibration import _TemperatureScaling

    z, y = data(a.n, a.k)
    z64 = z.astype(np.float64)
    probs = np.exp(z64 - z64.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    rows = {"metrics": ([], []), "temperature": ([], [], []), "binding": ([], [])}
    for _ in range(a.repeat):  # alternating, one of each per round
        t, _ = timed(lambda: calib.evaluate(z, y, input="logits"))
        rows["metrics"][0].append(t)
        t, _ = timed(lambda: peer_metrics(z, y))
        rows["metrics"][1].append(t)
        t, ts = timed(lambda: calib.TemperatureScaling(input="logits").fit(z, y))
        rows["temperature"][0].append(t)
        t, sk = timed(lambda: _TemperatureScaling().fit(z, y))
        rows["temperature"][1].append(t)
        t, nc = timed(lambda: netcal.scaling.TemperatureScaling().fit(probs, y))
        rows["temperature"][2].append(t)
        rows["binding"][0].append(min(rows["metrics"][0]))
        rows["binding"][1].append(cli_evaluate_time(z, y))
    best = {k: [min(v) for v in vs] for k, vs in rows.items()}
    print(f"{a.n} x {a.k} float32 logits, best of {a.repeat} alternating rounds")
    m = best["metrics"]
    print(f"default set: calib.evaluate {m[0]:.3f} s | torchmetrics + numpy {m[1]:.3f} s | {m[1] / m[0]:.1f}x")
    t = best["temperature"]
    print(f"temperature: calib {t[0]:.3f} s | scikit-learn {t[1]:.3f} s ({t[1] / t[0]:.1f}x) | "
          f"netcal {t[2]:.3f} s ({t[2] / t[0]:.1f}x); T = {ts.temperature_:.6f}, "
          f"scikit-learn {1 / sk.beta_:.6f}, netcal {1 / np.ravel(nc.temperature)[0]:.6f}")
    b = best["binding"]
    print(f"binding: calib.evaluate {b[0]:.3f} s | calib eval's evaluate step {b[1]:.3f} s | "
          f"{100 * (b[0] / b[1] - 1):+.1f} %")


if __name__ == "__main__":
    main()
