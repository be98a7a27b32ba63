#!/usr/bin/env bash
# The GPU checks of docs/benchmarks.md ("On a GPU") in one run, for a machine with a GPU and
# its Vulkan driver: the kernels' parity and budget tests, then `device_table` (the bandwidth
# floor, checked against unchecked launches, the metric sets on device parts, the fits).
#
# Build where you like, run where the GPU is:
#   cargo build --release --features wgpu --example device_table
#   cargo test --release --features wgpu --no-run --test device_kernels --test device_ranges --test device_budgets --test device_binary_maps
#   benches/device_check.sh DIR     # DIR holds device_table and the four test binaries
#                                   # (default: target/release and its deps/)
# Prints the tables last; writes the full output to $OUT (or ./device-check) as it goes.
set -uo pipefail
bin="${1:-target/release}"
out="${OUT:-device-check}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv 2>/dev/null
find_bin() { # the newest executable named $1 (or $1-<hash>) in $bin or $bin/deps
  find "$bin" "$bin/deps" "$bin/examples" -maxdepth 1 -type f -perm -u+x \
    \( -name "$1" -o -name "$1-*" \) ! -name "*.d" 2>/dev/null | xargs -r ls -t | head -1
}
export CALIB_REQUIRE_WGPU=1
for t in device_kernels device_ranges device_budgets device_binary_maps; do
  b="$(find_bin "$t")"
  if [ -z "$b" ]; then echo "no $t binary under $bin"; continue; fi
  timeout 300 "$b" 2>&1 | tail -3 | tee "$out/$t.txt"
done
table="$(find_bin device_table)"
timeout 300 "$table" --metrics-only --floor --checked-too --trace 50000x1000 1000000x1000 \
  2>&1 | tee "$out/metrics.txt"
timeout 300 "$table" --fits-only 5000x100 10000x100 50000x1000 2>&1 | tee "$out/fits.txt"
timeout 300 "$table" --fits-only --diagonal-fits --binary-maps 10000x10 50000x1000 2>&1 | tee "$out/maps.txt"
