"""Refit the calibrated device parameters, write them into the catalog files, and write the
leave-one-out cross-validation of the GPU serving profiles.

    python scripts/calibrate_devices.py          # fit, write, print the fits and the CV table
    python scripts/calibrate_devices.py --check  # exit 1 if any file is not current (no writes)

--check compares what a refit would write with the files. A file is current when its text is
the same except for numbers within PREDICTION_RTOL (relative, or FLOOR absolute) of the
refit's; a serving profile may differ by more in its fitted values where the refit predicts
every published point as the shipped values do (dse/data/gpu_cv.json, fitted and
leave-one-out, within PREDICTION_RTOL): the least-squares fits of a few profiles have flat
directions (terms at their zero bound, two points on one generation), which floating-point
noise between machines moves without moving any prediction.

Fits, in order (each uses the previous; repeated until nothing moves, since the Jetson host
slowdown and the MLC profile's Jetson points depend on each other):
1. every GPU serving profile of dse.validation.gpu_fit.FITS, to its own published points
   (dse/data/measured.toml, reference_points.toml, published.toml), values it takes from
   another profile copied first (gpu_fit.DERIVED); a profile of another build of a fitted
   stack (measurements.BUILDS: llama.cpp-cublas) takes that stack's fit whole;
2. the vLLM Jetson builds' host factor (the Orin boards' host_stack_slowdown) and FlexLLM's
   efficiency and power (dse/validation/calibrate.py);
3. the GPUs' launch-bound power state (wait_power_fraction, dse.validation.gpu_power), to the
   published batch-1 power of published.toml, one value per GPU generation with rows (a
   generation without rows takes the A100's, gpu_power.DEFAULT_GENERATION), written on every GPU
   board with its provenance line; its leave-one-source-out errors are printed.
Then the leave-one-out cross-validation of every profile goes to dse/data/gpu_cv.json, which
`dse reproduce --markdown` (docs/validation.md) renders.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import numpy as np

from dse.specs import Catalog
from dse.specs.schema import MIN_ABS, build_spec, parse_toml
from dse.validation import calibrate, gpu_cv, gpu_fit, gpu_power
from dse.validation.measurements import BUILDS, load_gpu_measurements

ROOT = Path(__file__).resolve().parents[1]
SERVING = ROOT / "boards" / "serving"
ENGINES = ROOT / "boards" / "engines"
GPUS = ROOT / "boards" / "gpus"
CV_JSON = ROOT / "dse" / "data" / "gpu_cv.json"
PREDICTION_RTOL = 1e-3
FLOOR = 1e-6
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
GENERATED = "# ---- written by scripts/calibrate_devices.py from here on; do not edit ----"


def number(v: float) -> str:
    """A fitted value as the catalog files hold it: six significant digits, and 0 for a value
    at its zero bound smaller than any catalog number may be (dse.specs.schema.MIN_ABS)."""
    return f"{0.0 if abs(v) < MIN_ABS else v:.6g}"


def set_keys(text: str, values: dict[str, float], where: Path) -> str:
    """Replace top-level `key = number` lines (the key must exist once)."""
    for key, v in values.items():
        text, n = re.subn(rf"(?m)^{re.escape(key)} = .*$", f"{key} = {number(v)}", text,
                          count=1)
        if n != 1:
            raise SystemExit(f"{where}: key {key} not found")
    return text


def _toml_str(s: str) -> str:
    return json.dumps(s)


def set_source(text: str, key: str, line: str, where: Path) -> str:
    """Replace a `key = "..."` provenance line (a quoted string: the [sources] entry, not the
    numeric value of the same key; it must exist once)."""
    text, n = re.subn(rf'(?m)^{re.escape(key)} = ".*"$', lambda _m: f"{key} = {_toml_str(line)}",
                      text, count=1)
    if n != 1:
        raise SystemExit(f"{where}: source line {key} not found")
    return text


def power_text(path: Path, text: str, cat: Catalog,
               fits: dict[str, gpu_power.GenerationFit]) -> str:
    """A GPU board file with its generation's wait_power_fraction and the value's provenance."""
    gen = cat.gpu(path.stem).generation
    text = set_keys(text, {"wait_power_fraction": gpu_power.value_for(fits, gen)}, path)
    return set_source(text, "wait_power_fraction",
                      gpu_power.board_source(fits, path.stem, gen), path)


def serving_text(path: Path, pf: gpu_fit.ProfileFit, cv: list[gpu_fit.CvPoint]) -> str:
    """The profile file with its fitted and derived values and a regenerated tail."""
    text = path.read_text(encoding="utf-8")
    head = text.split(GENERATED)[0]  # the hand-written part
    head = re.split(r"(?m)^\[calibration\]", head)[0].rstrip() + "\n"
    head = set_keys(head, {**pf.derived, **pf.fit.values}, path)
    loo = np.array([abs(c.loo_rel_error) for c in cv if c.loo_rel_error is not None])
    f = pf.fit
    params = ", ".join(p.key + (" (per GPU generation)" if p.by_generation else "")
                       for p in pf.spec.params)
    lines = [GENERATED, "[calibration]",
             f"fitted_to = {_toml_str(pf.spec.note)}",
             f"parameters = {_toml_str(params)}",
             f"derived = {_toml_str(', '.join(sorted(pf.derived)) or 'none')}",
             'method = "scipy.optimize.least_squares, soft-L1 loss on log(predicted / measured), '
             'dse.validation.gpu_fit"',
             f"points = {f.points}",
             f"base_generation = {_toml_str(f.base_generation)}",
             f"fit_rms_log_error = {f.rms_log_error:.6g}",
             f"fit_max_rel_error = {f.max_rel_error:.6g}",
             f"loo_points = {len(loo)}",
             f"loo_median_abs_rel_error = {float(np.median(loo)) if len(loo) else 0.0:.6g}",
             f"loo_max_abs_rel_error = {float(np.max(loo)) if len(loo) else 0.0:.6g}"]
    for gen, over in sorted(f.by_generation.items()):
        n = sum(1 for c in cv if c.generation == gen)
        source = f"fitted: the {n} {gen} points of this profile, scripts/calibrate_devices.py"
        lines += ["", f"[by_generation.{gen}]", f"source = {_toml_str(source)}"]
        lines += [f"{k} = {number(v)}" for k, v in over.items()]
    for gen, over in sorted(pf.derived_by_generation.items()):  # a profile built on a stack's fit
        source = (f"derived: {gpu_fit.ON_TOP_OF[pf.spec.profile]}'s {gen} values, "
                  "scripts/calibrate_devices.py")
        lines += ["", f"[by_generation.{gen}]", f"source = {_toml_str(source)}"]
        lines += [f"{k} = {number(v)}" for k, v in over.items()]
    return head + "\n" + "\n".join(lines) + "\n"


def fit_everything() -> tuple[dict[Path, str], list[gpu_fit.CvPoint]]:
    """What every calibrated file should contain, from the files as they are."""
    out: dict[Path, str] = {}
    pending: dict[Path, str] = {}
    for _ in range(6):  # fixed point of the Jetson hosts <-> MLC Jetson profile dependency
        cat = catalog_with(out)
        pts, _skipped = load_gpu_measurements(cat.names("model"), cat.names("gpu"),
                                              cat.names("gpu-serving"))
        fits = gpu_fit.fit_all(cat, pts)
        pending = {}
        for name, pf in fits.items():
            path = SERVING / f"{name}.toml"
            pending[path] = serving_text(path, pf, [])
        for b in BUILDS:  # another build of a fitted stack takes that stack's fit whole
            path = SERVING / f"{b.profile}.toml"
            pending[path] = serving_text(path, fits[b.of], [])
        flex = ENGINES / "flexllm.toml"
        cat = catalog_with(pending)
        for name, values in calibrate.jetson_hosts(cat).items():
            path = GPUS / f"{name}.toml"
            pending[path] = set_keys(path.read_text(encoding="utf-8"), values, path)
        pending[flex] = set_keys(flex.read_text(encoding="utf-8"), calibrate.fit_flexllm(cat),
                                 flex)
        power_fits = gpu_power.fit_by_generation(cat)
        for name in cat.names("gpu"):
            path = GPUS / f"{name}.toml"
            text = pending.get(path, path.read_text(encoding="utf-8"))
            pending[path] = power_text(path, text, cat, power_fits)
        if pending == out:
            break
        out = pending
    else:
        raise SystemExit("calibrate_devices: the Jetson hosts and the MLC Jetson profile found "
                         "no fixed point in 6 rounds")
    cat = catalog_with(out)
    pts, _ = load_gpu_measurements(cat.names("model"), cat.names("gpu"),
                                   cat.names("gpu-serving"))
    fits = gpu_fit.fit_all(cat, pts)
    cv: list[gpu_fit.CvPoint] = []
    for name, pf in fits.items():
        loso = gpu_fit.leave_one_source_out(cat, pf)
        mine = [replace(c, loso_s=loso[c.id]) for c in gpu_fit.leave_one_out(cat, pf)]
        cv += mine
        out[SERVING / f"{name}.toml"] = serving_text(SERVING / f"{name}.toml", pf, mine)
        for b in (b for b in BUILDS if b.of == name):
            out[SERVING / f"{b.profile}.toml"] = serving_text(SERVING / f"{b.profile}.toml", pf,
                                                              mine)
    # the in-sample values as the written (6-digit) files predict them
    cat = catalog_with(out)
    by_id = {m.id: m for m in pts}
    cv = [replace(c, fitted_s=gpu_fit.predict_s(cat, by_id[c.id], cat.serving(c.profile)))
          for c in cv]
    return out, cv


def catalog_with(files: dict[Path, str]) -> Catalog:
    """The shipped catalog with some files' contents replaced (in memory; nothing written)."""
    cat = Catalog.load()
    by_kind = {k: dict(v) for k, v in cat.items.items()}
    for path, text in files.items():
        spec = build_spec(path, parse_toml(text, path), stem=path.stem)
        for specs in by_kind.values():
            if spec.name in specs and specs[spec.name].path == str(path):
                specs[spec.name] = spec
    return Catalog({k: MappingProxyType(v) for k, v in by_kind.items()})


def power_table(cat: Catalog) -> str:
    """The wait share per GPU generation and each source document's rows predicted without it."""
    fits = gpu_power.fit_by_generation(cat)
    lines = ["", "wait_power_fraction per GPU generation (others take "
             f"{gpu_power.DEFAULT_GENERATION}'s):"]
    for gen, f in fits.items():
        err = np.abs(np.array(f.rel_errors))
        lines.append(f"  {gen:10s} {f.wait_power_fraction:.3f}  {len(f.point_ids)} rows "
                     f"({', '.join(f.devices)}), median |error| {np.median(err):.1%}, "
                     f"max {np.max(err):.1%}")
    lines.append("leave one source document out (power error of its rows at the value fitted "
                 "without it):")
    loso = gpu_power.leave_one_source_out(cat)
    for doc in sorted({p.document for p in loso}):
        mine = [p for p in loso if p.document == doc]
        err = np.abs([p.rel_error for p in mine])
        lines.append(f"  {doc}: {len(mine)} rows at {mine[0].wait_power_fraction:.3f}, "
                     f"median |error| {np.median(err):.1%}, max {np.max(err):.1%}")
    return "\n".join(lines)


def numbers_close(old: str, new: str, *, any_values: bool = False) -> bool:
    """The same text apart from its numbers, each within PREDICTION_RTOL (or FLOOR absolute)
    of the other (any_values: numbers may differ freely)."""
    if NUMBER.sub("#", old) != NUMBER.sub("#", new):
        return False
    if any_values:
        return True
    pairs = [(float(x), float(y)) for x, y in zip(NUMBER.findall(old), NUMBER.findall(new),
                                                  strict=True) if x != y]
    return all(abs(x - y) <= max(PREDICTION_RTOL * max(abs(x), abs(y)), FLOOR)
               for x, y in pairs)


def not_current(files: dict[Path, str]) -> list[Path]:
    """The files a refit would change beyond fit noise (module docstring)."""
    old = {p: p.read_text(encoding="utf-8") if p.exists() else None for p in files}
    cv_same = old[CV_JSON] is not None and numbers_close(old[CV_JSON], files[CV_JSON])
    out = []
    for p, text in files.items():
        was = old[p]
        if was is None:
            out.append(p)
        elif was != text and not numbers_close(was, text, any_values=cv_same and
                                               p.parent == SERVING):
            out.append(p)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only report whether files are current")
    args = ap.parse_args()
    files, cv = fit_everything()
    files[CV_JSON] = gpu_cv.dumps(cv)
    if args.check:
        stale = not_current(files)
        noise = [p for p in files if p not in stale and p.read_text(encoding="utf-8") != files[p]]
        for p in noise:
            print(f"fit noise only: {p.relative_to(ROOT)}")
        for p in stale:
            print(f"stale: {p.relative_to(ROOT)}")
        print("stale" if stale else "current")
        return 1 if stale else 0
    stale = [p for p, text in files.items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    for p in stale:
        p.write_text(files[p], encoding="utf-8")
        print(f"wrote {p.relative_to(ROOT)}")
    print(gpu_cv.text_table(gpu_cv.summarise(cv)))
    print(power_table(Catalog.load()))  # the files as just written
    return 0


if __name__ == "__main__":
    sys.exit(main())
