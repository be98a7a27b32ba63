#!/usr/bin/env bash
# Whole-process time and peak memory of `calib eval` on a 50,000 x 1,000 float32 dump, next to
# `cat FILE > /dev/null`, alternated and best of R rounds (docs/benchmarks.md, "Reading input").
#
#   bash benches/io.sh [CALIB_BINARY] [OTHER_CALIB_BINARY]
#
# Needs python3 with numpy to write the inputs (once, into $DIR, default /tmp/calib-io).
set -euo pipefail
new=${1:-target/release/calib}
old=${2:-}
dir=${DIR:-/tmp/calib-io}
rounds=${R:-5}
[ -x "$new" ] || cargo build --release -p calib-cli
mkdir -p "$dir"
if [ ! -f "$dir/big.npz" ]; then
  python3 - "$dir" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
n, k = 50000, 1000
z = (rng.standard_normal((n, k), dtype=np.float32) * 2).astype(np.float32)
y = rng.integers(0, k, n).astype(np.int64)
z[np.arange(n), y] += 6
np.savez(f"{d}/big.npz", logits=z, labels=y)
np.savez_compressed(f"{d}/big_c.npz", logits=z, labels=y)
np.save(f"{d}/big_logits.npy", z)
np.save(f"{d}/big_labels.npy", y)
PY
fi
runs=("cat|cat $dir/big.npz")
for bin in "$new" ${old:+"$old"}; do
  tag=$([ "$bin" = "$new" ] && echo new || echo old)
  runs+=(
    "$tag npz ece|$bin eval $dir/big.npz --metrics ece"
    "$tag npy ece|$bin eval $dir/big_logits.npy --labels $dir/big_labels.npy --metrics ece"
    "$tag npz default|$bin eval $dir/big.npz"
    "$tag npy default|$bin eval $dir/big_logits.npy --labels $dir/big_labels.npy"
    "$tag compressed npz ece|$bin eval $dir/big_c.npz --metrics ece"
  )
done
declare -A best peak
for _ in $(seq "$rounds"); do
  for run in "${runs[@]}"; do
    name=${run%%|*}
    out=$(/usr/bin/time -f "%e %M" bash -c "${run#*|} >/dev/null 2>&1" 2>&1 | tail -1)
    t=${out% *}
    if [ -z "${best[$name]:-}" ] || awk "BEGIN {exit !($t < ${best[$name]})}"; then best[$name]=$t; fi
    peak[$name]=${out#* }
  done
done
size=$(stat -c %s "$dir/big.npz")
printf '%-24s %8s %10s %12s\n' run "best s" "peak MiB" "peak / file"
for run in "${runs[@]}"; do
  name=${run%%|*}
  awk -v n="$name" -v t="${best[$name]}" -v m="${peak[$name]}" -v s="$size" \
    'BEGIN {printf "%-24s %8.2f %10.1f %12.2f\n", n, t, m / 1024, m * 1024 / s}'
done
