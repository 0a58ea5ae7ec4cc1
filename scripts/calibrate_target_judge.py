"""Fit the target judge's score distributions to published SpecReason rows, cross-validate the
fit, and write the data files.

    python scripts/calibrate_target_judge.py          # fit, write dse/data/target_judge.toml
                                                      # and dse/data/judge_cv.json
    python scripts/calibrate_target_judge.py --check  # exit 1 if either is not what the fit gives

Data: dse/data/specreason_published.toml. Model, usable rows, assumptions and the
cross-validation schemes: dse/validation/judge.py. The judge file keeps its prompt_tokens and
that key's source; kappa, the two means, the shift and every other source string are written
here.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dse.model.verifiers import GOOD_MEAN_RANGE, JUDGE_SCHEMA_VERSION, parse_judge
from dse.specs import Catalog
from dse.validation import judge
from dse.validation.current import close

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "dse" / "data"
JUDGE_PATH = DATA / "target_judge.toml"
CV_PATH = DATA / judge.CV_FILE
PARAM_KEYS = ("kappa", "good_mean", "bad_mean", "shift")
FIT = "fitted: scripts/calibrate_target_judge.py (dse/validation/judge.py)"
HEADER = """\
# The target judge (verifier = "target", dse/model/verifiers.py): the scoring instruction it
# prefills after each draft step, and the latent 0-1 score distributions of good and bad steps (the
# 0-9 token is floor(10 u)): u ~ Beta(mu kappa, (1 - mu) kappa), mu = good_mean or bad_mean minus
# shift x (1 - A_draft / A_target) (solo accuracies on the workload, x clipped at 0, mu clipped
# to its declared range). Fitted by scripts/calibrate_target_judge.py (model and assumptions:
# dse/validation/judge.py) to published SpecReason rows; the fit's cross-validation is in
# dse/data/judge_cv.json. Generated: edit the script, not this file (prompt_tokens and its
# source are kept as found).
"""


def _errors(s: Mapping[str, Any]) -> str:
    return (f"accuracy {s['median_abs_error']:.1f} / {s['max_abs_error']:.1f} points, "
            f"acceptance {s['acceptance_median_abs_error']:.2f} / "
            f"{s['acceptance_max_abs_error']:.2f}")


def scores_source(doc: Mapping[str, Any]) -> str:
    """What the form rests on and how well it predicts (median / max absolute errors)."""
    f = doc["fit"]
    one = doc["one_distribution_form"]
    return (
        f"{FIT}, the form Beta(mu kappa, (1 - mu) kappa) for good and bad steps, both means "
        "lowered by shift x the draft's relative error x = 1 - A_draft / A_target (a judge "
        f"rejects more of a weaker draft's steps), fitted to the {f['n']} usable SpecReason "
        "rows, Lookahead Reasoning (arXiv 2506.19830) Table 1 (R1-Distill 1.5B/32B and Qwen3 "
        "1.7B/32B on six datasets, threshold 9) and Table 2 (R1-Distill on GSM8K and AIME24 "
        "at threshold 7): SpecReason's accuracy and acceptance given both models' solo "
        f"accuracy, x {min(r['relative_error'] for r in f['rows']):.2f}-"
        f"{max(r['relative_error'] for r in f['rows']):.2f}. Median / max errors: in-sample "
        f"{_errors(f)}; leave one pair out {_errors(doc['leave_one_pair_out'])}; leave one "
        f"dataset out {_errors(doc['leave_one_dataset_out'])}; leave one threshold out "
        f"{_errors(doc['leave_one_threshold_out'])}; leave one row out "
        f"{_errors(doc['leave_one_row_out'])}. One distribution for every pair (shift 0, the "
        f"diagnostic in judge_cv.json): in-sample {_errors(one['fit'])}, leave one pair out "
        f"{_errors(one['leave_one_pair_out'])}")


def param_sources(doc: Mapping[str, Any]) -> dict[str, str]:
    """A source for each fitted parameter."""
    p = doc["fit"]["parameters"]
    lopo = [f["parameters"] for f in doc["leave_one_pair_out"]["folds"]]
    lodo = [f["parameters"] for f in doc["leave_one_dataset_out"]["folds"]]

    def spread(k: str) -> str:
        v = [q[k] for q in lopo + lodo]
        return f"{min(v):.3f}-{max(v):.3f} across the pair and dataset folds"

    bound = (": its declared upper bound (a good step of a draft as accurate as the target is "
             "all but always accepted)" if p["good_mean"] >= GOOD_MEAN_RANGE[1] - 1e-6 else "")
    return {
        "good_mean": f"{FIT}: the mean latent score of a good step by a draft as accurate as "
        f"the target (x = 0), {p['good_mean']:.3f}{bound}; {spread('good_mean')}",
        "bad_mean": f"{FIT}: the mean latent score of a bad step at x = 0, "
        f"{p['bad_mean']:.3f}; {spread('bad_mean')}",
        "shift": f"{FIT}: both means fall by {p['shift']:.3f} per unit of x = 1 - A_draft / "
        "A_target (one slope for both classes: a slope per class predicts a left-out pair up "
        "to 47 points off, tried); x is clipped at 0 (a draft stronger than the target is "
        f"judged as one equal to it: the fit saw none); {spread('shift')}"}


def render(old: str, p: judge.Params, doc: Mapping[str, Any]) -> str:
    """The judge file: its prompt_tokens (value and source) as found, the fitted parameters and
    the fit's source strings."""
    data = tomllib.loads(old)
    prompt = float(data["judge"]["prompt_tokens"])
    prompt_src = str(data["sources"]["prompt_tokens"])
    values = {k: float(v) for k, v in p.to_json().items()}
    assumptions = dict(judge.ASSUMPTIONS)
    srcs = {"prompt_tokens": prompt_src, "kappa": assumptions.pop("kappa"),
            **param_sources(doc), "scores": scores_source(doc), **assumptions}
    return (HEADER + f"schema_version = {JUDGE_SCHEMA_VERSION}\n\n[judge]\n"
            + f"prompt_tokens = {prompt!r}\n"
            + "".join(f"{k} = {values[k]:.6g}\n" for k in PARAM_KEYS) + "\n[sources]\n"
            + "".join(f"{k} = {_string(v)}\n" for k, v in srcs.items()))


def _string(v: str) -> str:
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _text(toml: str) -> str:
    """The file with every number blanked: its words, which the check compares exactly."""
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", toml)




def _load_cv() -> Mapping[str, Any] | None:
    """The CV file as it stands (None: absent or of another schema: stale)."""
    try:
        return judge.load()
    except (FileNotFoundError, ValueError):
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="only report whether the two files are what the fit gives")
    args = ap.parse_args()
    cat = Catalog.load()
    names = {str(cat.model(n).hf_id): n for n in cat.names("model") if cat.model(n).hf_id}
    p, doc = judge.cross_validate(judge.published(), names)
    print(f"fit: {p}")
    for k in ("fit", *judge.SCHEMES):
        print(f"  {k}: {_errors(doc[k])}")
    print(f"  one distribution (diagnostic): {_errors(doc['one_distribution_form']['fit'])}")
    old_toml = JUDGE_PATH.read_text(encoding="utf-8")
    new_toml = render(old_toml, p, doc)
    parse_judge(new_toml, JUDGE_PATH)  # what the verifier will read: strict, in range
    current = tomllib.loads(old_toml).get("judge", {})
    fitted = tomllib.loads(new_toml)["judge"]
    old_cv = _load_cv()
    stale_toml = not close({k: current.get(k) for k in PARAM_KEYS},
                           {k: fitted[k] for k in PARAM_KEYS}) or _text(old_toml) != _text(new_toml)
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
