"""Refit the calibrated device parameters and write them into the catalog files.

    python scripts/calibrate_devices.py          # fit, write, print the validation table
    python scripts/calibrate_devices.py --check  # exit 1 if the files are not current

Fits, in order (each uses the previous): vllm-cudagraph, vllm-eager (derived), hf-eager,
the Jetson Orin Nano's host CPU slowdown, flexllm. See dse/calibrate.py for what each
parameter is fitted to.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

from dse import calibrate
from dse.specs import Catalog

ROOT = Path(__file__).resolve().parents[1]
SERVING = ROOT / "boards" / "serving"
ENGINES = ROOT / "boards" / "engines"
GPUS = ROOT / "boards" / "gpus"


def set_keys(path: Path, values: dict[str, float]) -> bool:
    """Replace `key = number` lines in place; True if anything changed."""
    text = path.read_text(encoding="utf-8")
    new = text
    for key, v in values.items():
        new, n = re.subn(rf"(?m)^{re.escape(key)} = .*$", f"{key} = {v:.6g}", new, count=1)
        if n != 1:
            raise SystemExit(f"{path}: key {key} not found")
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def fit_all(write: bool) -> bool:
    changed = False
    cat = Catalog.load()
    cg = calibrate.fit_vllm_cudagraph(cat)
    changed |= write and set_keys(SERVING / "vllm-cudagraph.toml", cg)
    shared = {k: cg[k] for k in ("mem_bw_efficiency", "attention_bw_efficiency", "layer_gap_us")}
    changed |= write and set_keys(SERVING / "vllm-eager.toml", calibrate.derive_vllm_eager(cg))
    changed |= write and set_keys(SERVING / "hf-eager.toml", shared)
    cat = Catalog.load()
    hf = calibrate.fit_hf_eager(cat)
    changed |= write and set_keys(SERVING / "hf-eager.toml", hf)
    cat = Catalog.load()
    jet = calibrate.fit_jetson_host(cat)
    changed |= write and set_keys(ROOT / "boards" / "gpus" / "jetson-orin-nano-8gb.toml", jet)
    cat = Catalog.load()
    fx = calibrate.fit_flexllm(cat)
    changed |= write and set_keys(ENGINES / "flexllm.toml", fx)
    cat = Catalog.load()
    rows = calibrate.validation_rows(cat)
    groups = {
        "vllm-cudagraph.toml": [r for r in rows if r.fitted and "vllm-0.6.3" in r.id],
        "hf-eager.toml": [r for r in rows if r.fitted and "hf-transformers" in r.id],
        "flexllm.toml": [r for r in rows if r.fitted and r.id.startswith("fpga_")],
        "vllm-eager.toml": [],
    }
    for fname, rs in groups.items():
        errs = np.array([r.rel_error for r in rs]) if rs else np.zeros(1)
        stats = {"fit_rms_rel_error": float(np.sqrt(np.mean(errs**2))),
                 "fit_max_rel_error": float(np.max(np.abs(errs)))}
        folder = ENGINES if fname == "flexllm.toml" else SERVING
        changed |= write and set_keys(folder / fname, stats)
    print(f"{'id':<82} {'measured':>10} {'predicted':>10} {'error':>7}  fit")
    for r in rows:
        print(f"{r.id:<82} {r.measured:>10.4g} {r.predicted:>10.4g} {r.rel_error:>+7.1%}  "
              f"{'fit' if r.fitted else 'pred'}{'' if r.within else '  OUTSIDE'}")
    return changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="only report whether files are current")
    args = ap.parse_args()
    if args.check:
        import shutil
        import tempfile
        # Fit against a scratch copy so the check never writes the user's files.
        with tempfile.TemporaryDirectory() as d:
            for folder in (SERVING, ENGINES, GPUS):
                shutil.copytree(folder, Path(d) / folder.name)
            changed = fit_all(write=True)
            for folder in (SERVING, ENGINES, GPUS):
                for f in folder.glob("*.toml"):
                    bak = Path(d) / folder.name / f.name
                    if f.read_bytes() != bak.read_bytes():
                        f.write_bytes(bak.read_bytes())
        print("stale" if changed else "current")
        return 1 if changed else 0
    fit_all(write=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
