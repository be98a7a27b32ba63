"""torchmetrics' calibration error on CUDA, timed as examples/device_table.rs times calib:
data already on the GPU, median of 5 calls after a warm-up, synchronised.

    python3 benches/device_torchmetrics.py 50000x1000 1000000x1000

torchmetrics computes one metric per call: top-label ECE (l1), MCE (max) and RMSCE (l2)
with 15 even bins, and a temperature fit by torch's L-BFGS on the NLL (the usual recipe of
Guo et al.'s reference code) to the same 1e-6 gradient.
"""
import statistics
import sys
import time

import torch
from torchmetrics.functional.classification import multiclass_calibration_error


def median_ms(f, repeats=5):
    f()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def fit_temperature(logits, labels):
    log_t = torch.zeros(1, device=logits.device, requires_grad=True)
    opt = torch.optim.LBFGS([log_t], lr=1.0, max_iter=100, tolerance_grad=1e-6,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(logits / log_t.exp(), labels)
        loss.backward()
        return loss

    opt.step(closure)
    return log_t.exp().item()


def main():
    sizes = [tuple(map(int, s.split("x"))) for s in sys.argv[1:]] or [(50_000, 1_000)]
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for n, k in sizes:
        logits = torch.randn(n, k, device="cuda") * 3.0
        labels = torch.randint(0, k, (n,), device="cuda")
        probs = torch.softmax(logits, dim=1)
        for norm in ["l1", "max", "l2"]:
            t = median_ms(lambda: multiclass_calibration_error(
                probs, labels, num_classes=k, n_bins=15, norm=norm).item())
            print(f"| {n} x {k} | torchmetrics calibration error ({norm}) | {t:.2f} ms |")
        t = median_ms(lambda: torch.softmax(logits, dim=1).sum().item())
        print(f"| {n} x {k} | softmax alone | {t:.2f} ms |")
        t = median_ms(lambda: fit_temperature(logits, labels), repeats=3)
        print(f"| {n} x {k} | torch L-BFGS temperature fit | {t:.2f} ms |")


if __name__ == "__main__":
    main()
