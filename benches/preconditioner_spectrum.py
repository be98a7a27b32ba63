"""Condition numbers of structured matrix scaling's Hessian under Newton-CG's preconditioners
(docs/benchmarks.md, "Where the time goes"; crates/calib-train/src/fit/host/low_rank_blocks.rs
and shift_balance.rs), by Arnoldi on the preconditioned Hessian-vector products, at the start
(D = 0, b = 0) and at the optimum (an f64 L-BFGS-B solution).

    python3 benches/preconditioner_spectrum.py 5000x100                       # benchmark set
    python3 benches/preconditioner_spectrum.py data/lenet5_cifar100.npz 5000  # a shipped dump

Needs numpy and scipy (never in CI). `exact` is the per-class blocks of the Hessian (without
the row floor), `low-rank` the ridge's diagonal plus the data's curvature on
[weighted mean, e_c, e_b], `+balance` adds the shift space's exact solve.
"""
import sys

import numpy as np
import scipy.optimize as so
import scipy.sparse.linalg as sla


def load(args):
    if args[0].endswith(".npz"):
        d = np.load(args[0])
        n = int(args[1])
        return d["val_logits"][:n].astype(np.float64), d["val_labels"][:n]
    # benches/binary_maps_peers.py's multiclass_data, seed 0
    n, k = map(int, args[0].split("x"))
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1, (n, k)).astype(np.float32)
    y = rng.integers(0, k, n)
    z[np.arange(n), y] += 2.5
    z *= 1.8
    return z.astype(np.float64), y


def main():
    z, y = load(sys.argv[1:])
    n, k = z.shape

    def ts(t):
        s = z / t
        s = s - s.max(1, keepdims=True)
        return -(s - np.log(np.exp(s).sum(1, keepdims=True)))[np.arange(n), y].mean()

    t = so.minimize_scalar(ts, bounds=(0.05, 20), method="bounded").x
    e = 1 / (n + 1)
    s = z / t
    s -= s.max(1, keepdims=True)
    q = np.exp(s)
    q /= q.sum(1, keepdims=True)
    x = np.hstack([np.log((1 - e) * q + e / k), np.ones((n, 1))])
    pen = np.full((k, k + 1), k * (k - 1) / n)
    pen[np.arange(k), np.arange(k)] = k / n
    pen[:, k] = k / n
    eye = np.hstack([np.eye(k), np.zeros((k, 1))])
    onehot = np.eye(k)[y]

    def probs(th):
        a = x @ th.reshape(k, k + 1).T
        a = np.exp(a - a.max(1, keepdims=True))
        return a / a.sum(1, keepdims=True)

    def objective(th):
        theta = th.reshape(k, k + 1)
        p = probs(th)
        nll = -np.log(p[np.arange(n), y]).mean()
        grad = (p - onehot).T @ x / n + 2 * pen * (theta - eye)
        return nll + (pen * (theta - eye) ** 2).sum(), grad.ravel()

    def hvp(p, v):
        u = x @ v.reshape(k, k + 1).T
        r = p * (u - (p * u).sum(1, keepdims=True))
        return (r.T @ x / n + 2 * pen * v.reshape(k, k + 1)).ravel()

    def woodbury(c, basis, moments):
        dinv = 1 / (2 * pen[c])
        inner = moments @ np.linalg.inv(np.eye(3) + basis.T @ (dinv[:, None] * basis) @ moments)
        return lambda r: dinv * r - dinv * (basis @ (inner @ (basis.T @ (dinv * r))))

    def preconditioners(p):
        w = p * (1 - p)
        exact = [np.linalg.inv((x * w[:, [c]]).T @ x / n + np.diag(2 * pen[c])) for c in range(k)]
        means = w.T @ x
        low = []
        for c in range(k):
            u = means[c].copy()
            u[c] = u[k] = 0
            basis = np.zeros((k + 1, 3))
            basis[:, 0] = u / np.linalg.norm(u)
            basis[c, 1] = basis[k, 2] = 1
            xb = x @ basis
            low.append(woodbury(c, basis, (xb * w[:, [c]]).T @ xb / n))
        shift = (2 * pen).mean(0)

        def coarse(r):
            return np.broadcast_to(r.mean(0, keepdims=True) / shift, r.shape)

        def balanced(blocks):
            def apply(r):
                qr = coarse(r)
                zr = blocks(r - 2 * pen * qr)
                return qr + zr - coarse(2 * pen * zr)
            return apply

        exact_apply = lambda r: np.stack([exact[c] @ r[c] for c in range(k)])
        low_apply = lambda r: np.stack([low[c](r[c]) for c in range(k)])
        return {"exact": exact_apply, "exact+balance": balanced(exact_apply),
                "low-rank": low_apply, "low-rank+balance": balanced(low_apply)}

    def condition(p, pre):
        dim = k * (k + 1)
        op = sla.LinearOperator((dim, dim), matvec=lambda v: pre(hvp(p, v).reshape(k, k + 1)).ravel())
        top = abs(sla.eigs(op, k=1, which="LM", return_eigenvectors=False, tol=1e-3)[0])
        shifted = sla.LinearOperator((dim, dim), matvec=lambda v: top * v - op.matvec(v))
        bottom = top - abs(sla.eigs(shifted, k=1, which="LM", return_eigenvectors=False, tol=1e-3)[0])
        return top / bottom

    start = eye.ravel().copy()
    fit = so.minimize(objective, start, jac=True, method="L-BFGS-B",
                      options=dict(gtol=1e-9, ftol=0, maxiter=3000))
    print(f"{sys.argv[1]}: N = {n}, K = {k}, T = {t:.4f}")
    for where, th in [("start", start), ("optimum", fit.x)]:
        p = probs(th)
        conds = {name: condition(p, pre) for name, pre in preconditioners(p).items()}
        print(f"  {where:8s}" + "  ".join(f"{name} {c:.3g}" for name, c in conds.items()))


if __name__ == "__main__":
    main()
