"""Fit the target judge's score distributions to published SpecReason rows, cross-validate the
fit, and write the data files.

    python scripts/calibrate_target_judge.py          # fit, write dse/data/target_judge.toml
                                                      # and dse/data/judge_cv.json
    python scripts/calibrate_target_judge.py --check  # exit 1 if either is not what the fit gives

Data: dse/data/specreason_published.toml. Model, usable rows, assumptions and the
cross-validation schemes: dse/validation/judge.py. The judge file keeps its prompt_tokens and
that key's source; its four Beta parameters and every other source string are written here.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dse.specs import Catalog
from dse.validation import judge

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "dse" / "data"
JUDGE_PATH = DATA / "target_judge.toml"
CV_PATH = DATA / judge.CV_FILE
BETA_KEYS = ("good_alpha", "good_beta", "bad_alpha", "bad_beta")
HEADER = """\
# The target judge (verifier = "target", dse/verifiers.py): the scoring instruction it prefills
# after each draft step, and the latent 0-1 score distributions of good and bad steps (the 0-9
# token is floor(10 u)). The score distributions are fitted by scripts/calibrate_target_judge.py
# (model and assumptions: dse/validation/judge.py) to published SpecReason rows; the fit's
# cross-validation is in dse/data/judge_cv.json. Generated: edit the script, not this file
# (prompt_tokens and its source are kept as found).
"""


def scores_source(doc: Mapping[str, Any]) -> str:
    f, p = doc["fit"], doc["fit"]["parameters"]
    lopo, lodo = doc["leave_one_pair_out"], doc["leave_one_dataset_out"]
    shift = doc["difficulty_shift_form"]["leave_one_pair_out"]
    return (
        "fitted: scripts/calibrate_target_judge.py (dse/validation/judge.py), Beta(mu kappa, "
        f"(1 - mu) kappa) for good and bad steps, kappa {p['kappa']:g} (assumption), one "
        "distribution per class for every pair, dataset and threshold (TargetJudge.scores(w) "
        f"sees neither draft nor target), fitted to the {f['n']} usable SpecReason rows, "
        "Lookahead Reasoning (arXiv 2506.19830) Table 1 (R1-Distill 1.5B/32B and Qwen3 "
        "1.7B/32B on six datasets, threshold 9) and Table 2 (R1-Distill on GSM8K and AIME24 "
        "at threshold 7): SpecReason's accuracy and acceptance given both models' solo "
        f"accuracy; mu_good {p['good_mean']:.3f}, mu_bad {p['bad_mean']:.3f}; accuracy error "
        f"in-sample median {f['median_abs_error']:.1f} / max {f['max_abs_error']:.1f} points, "
        f"leave one pair out {lopo['median_abs_error']:.1f} / {lopo['max_abs_error']:.1f}, "
        f"leave one dataset out {lodo['median_abs_error']:.1f} / {lodo['max_abs_error']:.1f}; "
        f"acceptance error in-sample median {f['acceptance_median_abs_error']:.2f} / max "
        f"{f['acceptance_max_abs_error']:.2f}: the measured acceptance moves from 0.08 to 0.97 "
        "at one threshold with the draft's relative error, which one distribution cannot "
        "follow (a shift of both means with it would bring the leave-one-pair-out acceptance "
        f"error to a median {shift['acceptance_median_abs_error']:.2f}; dse/data/judge_cv.json)")


def render(old: str, p: judge.Params, doc: Mapping[str, Any]) -> str:
    """The judge file: its prompt_tokens (value and source) as found, the fitted Betas and the
    fit's source strings."""
    data = tomllib.loads(old)
    prompt = float(data["judge"]["prompt_tokens"])
    prompt_src = str(data["sources"]["prompt_tokens"])
    s = p.scores()
    values = dict(zip(BETA_KEYS, (s.good_alpha, s.good_beta, s.bad_alpha, s.bad_beta),
                      strict=True))
    srcs = {"prompt_tokens": prompt_src, "scores": scores_source(doc), **judge.ASSUMPTIONS}
    return (HEADER + "schema_version = 1\n\n[judge]\n" + f"prompt_tokens = {prompt!r}\n"
            + "".join(f"{k} = {v:.6g}\n" for k, v in values.items()) + "\n[sources]\n"
            + "".join(f"{k} = {_string(v)}\n" for k, v in srcs.items()))


def _string(v: str) -> str:
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _text(toml: str) -> str:
    """The file with every number blanked: its words, which the check compares exactly."""
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", toml)


def close(a: Any, b: Any) -> bool:
    """Equal up to the optimiser's noise (1e-3 relative, or absolute below 1)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, float | int) and isinstance(b, float | int):
        return abs(a - b) <= 1e-3 * max(1.0, abs(a), abs(b))
    return bool(a == b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="only report whether the two files are what the fit gives")
    args = ap.parse_args()
    cat = Catalog.load()
    names = {str(cat.model(n).hf_id): n for n in cat.names("model") if cat.model(n).hf_id}
    p, doc = judge.cross_validate(judge.published(), names)
    f, lopo = doc["fit"], doc["leave_one_pair_out"]
    print(f"fit: {p}; accuracy median {f['median_abs_error']:.2f} / max "
          f"{f['max_abs_error']:.2f} points, acceptance median "
          f"{f['acceptance_median_abs_error']:.3f}; leave one pair out median "
          f"{lopo['median_abs_error']:.2f} / max {lopo['max_abs_error']:.2f}")
    old_toml = JUDGE_PATH.read_text(encoding="utf-8")
    new_toml = render(old_toml, p, doc)
    current = tomllib.loads(old_toml)["judge"]
    fitted = tomllib.loads(new_toml)["judge"]
    old_cv = judge.load() if CV_PATH.exists() else None
    stale_toml = not close({k: current.get(k) for k in BETA_KEYS},
                           {k: fitted[k] for k in BETA_KEYS}) or _text(old_toml) != _text(new_toml)
    stale_cv = old_cv is None or not close(old_cv, doc)
    if args.check:
        for name, stale in ((JUDGE_PATH.name, stale_toml), (CV_PATH.name, stale_cv)):
            print(f"{name}: {'stale' if stale else 'current'}")
        return 1 if stale_toml or stale_cv else 0
    if new_toml != old_toml:
        JUDGE_PATH.write_text(new_toml, encoding="utf-8")
    if stale_cv:
        CV_PATH.write_text(judge.dumps(doc), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
