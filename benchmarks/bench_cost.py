"""Vectorised cost-primitive throughput: decode-time evaluations per second on one core.

    python benchmarks/bench_cost.py [--n 5000000]

Builds the coefficient table of every (model, GPU, serving profile, precision) and (model,
FPGA, engine) combination of the catalog once, then evaluates decode time per token for N
random draws (one of them and a context) in one call, gather included. Target: at least 5
million evaluations per second.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import fields

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from _timing import best_of

from dse.devices import fpga, gpu
from dse.devices.shape import precision
from dse.specs import Catalog


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    cat = Catalog.load()
    # every (model, GPU, serving profile) at BF16 and w4a16: the profiles' generation
    # overrides, quantised-layer and eager-fallback terms are all in the table
    table = [gpu.gpu_cost(cat.model(m), cat.gpu(d), precision(p), cat.serving(s))
             for m in cat.names("model") for d in cat.names("gpu")
             for s in cat.names("gpu-serving") for p in ("bf16", "w4a16")]
    stacked = gpu.stack(table)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(table), args.n)
    ctx = rng.integers(0, 32_768, args.n).astype(float)

    def run_gpu() -> np.ndarray:
        c = gpu.GpuCost(**{f.name: np.asarray(getattr(stacked, f.name))[idx]
                           for f in fields(gpu.GpuCost)})
        return gpu.decode_token_s(c, ctx)

    fcosts = [fpga.fpga_cost(cat.model(m), fpga.default_build(cat.fpga(b), cat.engine(e)))
              for m in cat.names("model") for b in cat.names("fpga")
              for e in cat.names("fpga-engine")]
    fstack = fpga.stack(fcosts)
    fidx = rng.integers(0, len(fcosts), args.n)

    def run_fpga() -> np.ndarray:
        c = fpga.FpgaCost(**{f.name: np.asarray(getattr(fstack, f.name))[fidx]
                             for f in fields(fpga.FpgaCost)})
        return fpga.decode_token_s(c, ctx)

    for name, fn in (("gpu decode_token_s", run_gpu), ("fpga decode_token_s", run_fpga)):
        fn()  # warm up
        best = best_of(fn, args.repeats)
        print(f"{name}: {args.n:,} (model, device, context) evaluations in {best:.3f} s "
              f"= {args.n / best / 1e6:.1f} million/s (target >= 5)")


if __name__ == "__main__":
    main()
