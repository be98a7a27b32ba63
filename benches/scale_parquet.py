"""Writes z.npy / y.npy (from benches/scale_npy.py) as one Parquet table for docs/scale.md.

python3 benches/scale_parquet.py DIR [ROWS_PER_GROUP]
Columns: `logits` (fixed_size_list<float32>[K]) and `labels` (int64), uncompressed (random
logits do not compress), row groups of 65,536 rows by default. Needs pyarrow.
"""
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

out = sys.argv[1] if len(sys.argv) > 1 else "."
group = int(sys.argv[2]) if len(sys.argv) > 2 else 65_536
z = np.load(f"{out}/z.npy", mmap_mode="r")
y = np.load(f"{out}/y.npy")
n, k = z.shape
schema = pa.schema([("logits", pa.list_(pa.float32(), k)), ("labels", pa.int64())])
with pq.ParquetWriter(f"{out}/z.parquet", schema, compression="none") as w:
    for a in range(0, n, group):
        b = min(n, a + group)
        flat = pa.array(np.ascontiguousarray(z[a:b]).reshape(-1))
        logits = pa.FixedSizeListArray.from_arrays(flat, k)
        w.write_table(pa.table({"logits": logits, "labels": pa.array(y[a:b])}, schema=schema))
