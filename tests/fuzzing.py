"""Input generators and checks shared by the hardening tests (tests/test_fuzz.py, ...) and
scripts/reliability_report.py.

Every generator takes an explicit `random.Random`-like `rng` (hypothesis's `st.randoms()` in the
tests, a seeded `random.Random` in the report script), so a campaign is reproducible from its
seed and hypothesis can still shrink what it drew.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.engine.closed_form import BUSY_RTOL
from dse.engine.report import Report
from dse.io.resolve import override_spec as with_overrides
from dse.model.design import Design, build_design, infeasibility
from dse.model.schedules import PRESETS, Schedule
from dse.specs import Catalog, FpgaSpec
from dse.specs.scenario import WorkloadSpec

ROOT = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------------ random designs

PAPER_SYSTEMS = ("paper-config1-3090", "paper-config1-u280", "paper-config1-v80",
                 "paper-config1-jetson", "paper-config2-3090", "paper-config2-u280",
                 "paper-config2-v80", "paper-config2-jetson")
WORKLOADS = ("gsm8k", "math500", "gaokao2023en", "olympiadbench")
GPU_PRECISIONS = ("bf16", "fp16", "w8a16", "w4a16")
FPGA_PRECISIONS = ("w8a8", "w8a16", "w4a16")


@dataclass(frozen=True)
class DesignCase:
    """One drawn design: the system overrides on a paper system, the schedule, the workload."""

    system: str
    overrides: dict[str, Any]
    schedule: Schedule
    workload: str

    def describe(self) -> str:
        return (f"{self.system} {self.schedule.name} on {self.workload} "
                f"--set {' '.join(f'{k}={v}' for k, v in sorted(self.overrides.items()))}")


def _models_known(cat: Catalog, workload: str, role: str, family: str | None = None
                  ) -> list[str]:
    """Models that can play `role`, have a solo accuracy on the workload (generators) and
    share the tokenizer `family` when given."""
    w = cat.get("workload", workload)
    out = []
    for n in cat.names("model"):
        m = cat.model(n)
        if role not in m.roles or (role != "prm" and n not in w.accuracy):
            continue
        if family is not None and m.tokenizer_family != family:
            continue
        out.append(n)
    return out


def random_design_case(cat: Catalog, rng: Any) -> DesignCase:
    """A well-formed design drawn from the catalog: a paper system with random thresholds,
    budgets, window, context, devices, models and precisions, and a random schedule."""
    system = rng.choice(PAPER_SYSTEMS)
    workload = rng.choice(WORKLOADS)
    over: dict[str, Any] = {
        "accept_threshold": rng.choice([0.0, 1.0, round(rng.random(), 4)]),
        "backtrack_threshold": rng.choice([0.0, 1.0, round(rng.random(), 4)]),
        "max_backtracks": rng.randint(0, 8),
        "backtrack_window": rng.randint(1, 6),
        "max_context_tokens": rng.choice([512, 1024, 2048, 3072, 4096]),
    }
    if rng.random() < 0.6:  # swap models and devices
        target = rng.choice(_models_known(cat, workload, "target"))
        family = cat.model(target).tokenizer_family
        over["target_model"] = target
        over["draft_model"] = rng.choice(_models_known(cat, workload, "draft", family))
        over["prm_model"] = rng.choice(_models_known(cat, workload, "prm"))
        gpus = cat.names("gpu")
        over["prm_device"] = rng.choice(gpus)
        over["target_device"] = rng.choice(gpus)
        over["target_tp"] = rng.choice([1, 1, 2])
        over["prm_precision"] = rng.choice(GPU_PRECISIONS)
        over["target_precision"] = rng.choice(GPU_PRECISIONS)
        over["prm_serving"] = rng.choice(cat.names("gpu-serving"))
        over["target_serving"] = rng.choice(cat.names("gpu-serving"))
        draft_dev = rng.choice(cat.names("gpu") + cat.names("fpga"))
        over["draft_device"] = draft_dev
        dev = cat.device(draft_dev)
        if isinstance(dev, FpgaSpec):
            over["draft_precision"] = rng.choice(FPGA_PRECISIONS)
            over["draft_engine"] = "flexllm"
            lo, hi = dev.clock_min_hz / 1e6, dev.clock_max_hz / 1e6
            over["fpga_clock_MHz"] = round(lo + (hi - lo) * rng.random(), 1)
            # None: the key left out (the board's channels, the engine's lanes)
            channels = rng.choice([None, max(dev.memory_channels // 2, 1), dev.memory_channels])
            lanes = rng.choice([None, 512, 1024, 2048, 4096])
            if channels is not None:
                over["fpga_memory_channels"] = channels
            if lanes is not None:
                over["fpga_mac_lanes"] = lanes
        else:
            over["draft_precision"] = rng.choice(GPU_PRECISIONS)
            over["draft_serving"] = rng.choice(cat.names("gpu-serving"))
    flags = {"backtracking": rng.random() < 0.7, "step_ahead": rng.random() < 0.5,
             "shadow_sync": rng.random() < 0.5}
    sched = rng.choice(list(PRESETS.values())).with_flags(**flags) if rng.random() < 0.5 \
        else rng.choice(list(PRESETS.values()))
    u = rng.random()
    if u < 0.15:  # the target alone (an FPGA draft's build knobs do not apply: refused)
        over["workflow"] = "target-only"
        for k in ("fpga_clock_MHz", "fpga_memory_channels", "fpga_mac_lanes"):
            over.pop(k, None)
    elif u < 0.5:  # a target judge, roles sharing a GPU, or both
        if rng.random() < 0.5:
            over["verifier"] = "target"
        groups = (["draft+target"] if over.get("verifier") == "target" else
                  ["draft+target", "prm+target", "draft+prm", "draft+prm+target"])
        if rng.random() < 0.6:
            group = rng.choice(groups)
            base = cat.get("system", system)
            gpu = over.get("target_device", base.target_device)  # type: ignore[attr-defined]
            if "draft" in group:
                over |= {"draft_device": gpu, "draft_precision": "bf16",
                         "draft_serving": rng.choice(cat.names("gpu-serving"))}
                for k in ("draft_engine", "fpga_clock_MHz", "fpga_memory_channels",
                          "fpga_mac_lanes"):
                    over.pop(k, None)
            if "prm" in group:
                over["prm_device"] = gpu if "target" in group else over["draft_device"]
            over["colocate"] = group
        # the schedules a shared device can run (dse.model.design.schedule_conflicts; a target
        # verifier shares the target's device)
        roles = set(over.get("colocate", "").split("+")) | (
            {"prm", "target"} if over.get("verifier") == "target" else set())
        sched = sched.with_flags(
            step_ahead=False,
            shadow_sync=sched.shadow_sync and not {"draft", "target"} <= roles,
            backtracking=sched.backtracking and not {"draft", "prm"} <= roles)
    return DesignCase(system, over, sched, workload)


def build_case(cat: Catalog, case: DesignCase, **flags: bool) -> Design:
    """The case's design (check=False: the caller decides what to do with infeasibility)."""
    spec = with_overrides(cat.get("system", case.system), case.overrides)  # type: ignore[arg-type]
    return build_design(cat, spec, case.schedule.with_flags(**flags), check=False)


def feasible(d: Design) -> bool:
    return not infeasibility(d)


# ----------------------------------------------------------------------------- invariants

# Relative tolerance of "parts sum to totals": float summation of a few dozen terms.
SUM_RTOL = 1e-9
# Step-ahead vs its sequential twin: the closed form takes expectations over the same
# quadrature grids, and the step-ahead attempt is never longer than the sequential one point
# by point (dse.model.schedules: it only moves the draft's next step into the verification window),
# so the only slack is float rounding.
TWIN_RTOL = 1e-9


def draft_token_floor_s(d: Design) -> float:
    """The draft's fastest possible token: its weights streamed once at the device's peak
    memory bandwidth (no KV, no efficiency, no overhead), split over tp GPUs."""
    dev = d.draft.device
    if isinstance(dev, FpgaSpec):
        bw = max(dev.hbm_bytes_per_s if dev.uses_hbm else dev.ddr_bytes_per_s, 1.0)
    else:
        bw = dev.mem_bw_bytes_per_s * d.draft.tp
    return d.draft.weights_bytes / bw


def report_violations(d: Design, w: WorkloadSpec, r: Report) -> list[str]:
    """The invariants every Report must satisfy; the names of those it breaks."""
    bad: list[str] = []
    scalars = {k: v for k, v in r.to_dict().items()
               if isinstance(v, float | int) and not isinstance(v, bool)}
    nested = {f"{k}.{kk}": vv for k in ("latency_breakdown_s", "step_latency_share",
                                        "energy_by_device_j")
              for kk, vv in getattr(r, k).items()}
    nested |= {f"devices.{dev}.{kk}": vv for dev, x in r.devices.items() for kk, vv in x.items()}
    for k, v in {**scalars, **nested}.items():
        if not math.isfinite(v):
            bad.append(f"non-finite {k}={v}")
        elif v < 0:
            bad.append(f"negative {k}={v}")
    if bad:
        return bad
    lat = r.latency_s_per_problem
    if not lat > 0:
        bad.append(f"latency {lat} not > 0")
    if abs(sum(r.latency_breakdown_s.values()) - lat) > SUM_RTOL * lat:
        bad.append(f"latency breakdown sums to {sum(r.latency_breakdown_s.values())} != {lat}")
    if abs(sum(r.step_latency_share.values()) - 1.0) > SUM_RTOL:
        bad.append(f"step_latency_share sums to {sum(r.step_latency_share.values())}")
    e = r.energy_j_per_problem
    if abs(sum(r.energy_by_device_j.values()) - e) > SUM_RTOL * e:
        bad.append("energy_by_device_j does not sum to energy_j_per_problem")
    if r.accuracy is not None and not 0.0 <= r.accuracy <= 100.0:
        bad.append(f"accuracy {r.accuracy} outside [0, 100]")
    if not 0.0 <= r.p_accept <= 1.0:
        bad.append(f"p_accept {r.p_accept} outside [0, 1]")
    for k in ("communication_share", "speculation_stall_ratio", "wasted_energy_share"):
        if getattr(r, k) > 1.0 + SUM_RTOL:
            bad.append(f"{k} {getattr(r, k)} > 1")
    # physical bounds: every attempt decodes a draft step of draft_step_tokens_mean tokens
    # (in expectation) on the one draft device, no faster than its memory roofline; and a
    # device is never busy longer than the wall clock, up to the closed form's own tolerance
    # (BUSY_RTOL: the head starts after a reject are a fixed point iterated to 0.1% of an
    # attempt; beyond it closed_form_caveats flags the report)
    if d.is_speculative:
        floor = r.attempts_per_problem * w.draft_step_tokens_mean * draft_token_floor_s(d)
        if lat < floor * (1 - SUM_RTOL):
            bad.append(f"latency {lat} below the draft's roofline floor {floor}")
    if set(r.devices) != set(d.roles):
        bad.append(f"devices {sorted(r.devices)} are not the design's roles {d.roles}")
    for dev in r.devices:
        busy = r.devices[dev]["busy_s"]
        if busy > lat * (1 + BUSY_RTOL):
            bad.append(f"{dev} busy {busy} s > latency {lat} s")
    return bad


# -------------------------------------------------------------------------- the CLI, in-process


@dataclass(frozen=True)
class CliResult:
    rc: int
    out: str
    err: str

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.err + self.out


def run_cli(argv: Sequence[str], cwd: Path | None = None) -> CliResult:
    """`dse ARGV` in this process; argparse's SystemExit becomes the return code. An exception
    that escapes `main` is reported as rc -1 with its traceback in `err` (a crash)."""
    import traceback

    from dse.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(list(argv))
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Exception:  # a crash: what the campaigns look for
                traceback.print_exc()
                rc = -1
    finally:
        os.chdir(old)
    return CliResult(rc, out.getvalue(), err.getvalue())


def one_error_line(res: CliResult) -> str | None:
    """The single stderr line of a clean error, else None."""
    lines = res.err.strip("\n").split("\n")
    if len(lines) != 1 or not lines[0] or res.traceback:
        return None
    return lines[0]


# ----------------------------------------------------------------------- malformed catalogs

# Files a mutation may target: a shipped catalog file of each kind.
CATALOG_FILES = {
    "gpu": "boards/gpus/rtx-3090.toml",
    "fpga": "boards/fpgas/u280.toml",
    "link": "boards/links/pcie-gen4-x16.toml",
    "gpu-serving": "boards/serving/vllm-cudagraph.toml",
    "fpga-engine": "boards/engines/flexllm.toml",
    "model": "models/qwen2.5-0.5b-instruct.toml",
    "workload": "scenarios/workloads/math500.toml",
    "system": "scenarios/systems/paper-config1-u280.toml",
}
MUTATIONS = ("missing_key", "wrong_type", "nan", "inf", "negative", "zero", "huge", "tiny",
             "unicode_name", "path_name", "duplicate_name", "unknown_key", "syntax",
             "duplicate_key", "binary", "hf_config_missing")
JUNK_VALUES = ('"fast"', "true", "[1, 2]", "{ a = 1 }", "1979-05-27", '""')
NAMES = ("ünïcödé", "../../etc/passwd", "/abs/path", "a/b", "..", "CON", "x" * 300, "",
         "name with spaces", "a\\b", "🙂")


def _numeric_keys(text: str) -> list[str]:
    """Top-level numeric keys (the schema's; sub-tables are provenance or per-model maps)."""
    out = []
    for line in text.splitlines():
        if line.startswith("["):
            break
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(-?[0-9][0-9_.eE+-]*)\s*(#.*)?$", line)
        if m and m.group(1) != "schema_version":
            out.append(m.group(1))
    return out


def _top_keys(text: str) -> list[str]:
    keys = []
    for line in text.splitlines():
        if line.startswith("["):
            break
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=", line)
        if m:
            keys.append(m.group(1))
    return keys


def _value_type(text: str, key: str) -> str:
    """The TOML type of a top-level key's value (int and float count as one: a number)."""
    import tomllib

    m = re.search(rf"(?m)^{re.escape(key)}\s*=.*$", text)
    v = tomllib.loads(m.group(0))[key] if m else None
    return "number" if isinstance(v, int | float) and not isinstance(v, bool) \
        else type(v).__name__


def _set_key(text: str, key: str, value: str) -> str:
    return re.sub(rf"(?m)^{re.escape(key)}\s*=.*$", lambda _: f"{key} = {value}", text, count=1)


@dataclass(frozen=True)
class Mutation:
    kind: str  # catalog kind mutated
    mutation: str  # one of MUTATIONS
    file: str  # the file name the error must name
    detail: str


def mutate_catalog(rng: Any, out_dir: Path) -> Mutation:
    """Write into out_dir (a --catalog directory) one malformed copy of a shipped file; returns
    what was done. out_dir must be empty or hold only earlier mutations' files."""
    mutation = rng.choice(MUTATIONS)
    if mutation == "hf_config_missing":
        return _mutate_hf_config(rng, out_dir)
    kind = rng.choice(sorted(CATALOG_FILES))
    src = ROOT / CATALOG_FILES[kind]
    text = src.read_text(encoding="utf-8")
    stem = src.stem
    new_stem = f"fuzz-{kind}"
    text = _set_key(text, "name", json.dumps(new_stem))
    nums = _numeric_keys(text)
    from dse.specs import SCHEMAS

    optional = {k.toml for k in SCHEMAS[kind].keys if k.optional}  # absent: a valid default
    tops = [k for k in _top_keys(text) if k not in ("schema_version", "kind", "name",
                                                     "description", "published_params")]
    required = [k for k in tops if k not in optional]
    detail = ""
    data: bytes | None = None
    if mutation == "missing_key":
        key = rng.choice(required)
        text = re.sub(rf"(?m)^{re.escape(key)}\s*=.*\n", "", text, count=1)
        detail = key
    elif mutation == "wrong_type":
        key = rng.choice(tops)
        before = _value_type(text, key)
        text = _set_key(text, key, rng.choice([v for v in JUNK_VALUES
                                               if _value_type(f"x = {v}", "x") != before]))
        detail = key
    elif mutation in ("nan", "inf", "negative", "zero", "huge", "tiny"):
        key = rng.choice(nums)
        value = {"nan": rng.choice(["nan", "-nan", "+nan"]), "inf": rng.choice(["inf", "-inf"]),
                 "negative": f"-{rng.choice(['1', '0.5', '1e9'])}", "zero": "0",
                 "huge": rng.choice(["1e308", "1e400", "9" * 40, "1e300"]),
                 "tiny": rng.choice(["1e-300", "5e-324", "1e-31"])}[mutation]
        text = _set_key(text, key, value)
        detail = f"{key}={value}"
    elif mutation in ("unicode_name", "path_name"):
        name = rng.choice(NAMES)
        text = _set_key(text, "name", json.dumps(name))
        detail = name
    elif mutation == "duplicate_name":
        text = _set_key(text, "name", json.dumps(stem))  # same name as the shipped file
        new_stem = stem
        detail = stem
    elif mutation == "unknown_key":
        text = text.replace("\n[", "\nbogus_key = 1\n\n[", 1) if "\n[" in text \
            else text + "bogus_key = 1\n"
        detail = "bogus_key"
    elif mutation == "syntax":
        lines = text.splitlines()
        i = rng.randrange(len(lines))
        lines.insert(i, rng.choice(["= 1", "[unclosed", 'x = "unterminated', "x = 1 2",
                                    "[[", "a.b.c = }"]))
        text = "\n".join(lines) + "\n"
    elif mutation == "duplicate_key":
        key = rng.choice(tops)
        text = re.sub(rf"(?m)^({re.escape(key)}\s*=.*)$", r"\1\n\1", text, count=1)
        detail = key
    elif mutation == "binary":
        data = text.encode("utf-8")[: rng.randrange(10, 200)] + bytes(
            rng.randrange(256) for _ in range(16)) + b"\xff\xfe"
    if mutation == "duplicate_name":
        path = out_dir / f"{stem}.toml"
    else:
        path = out_dir / f"{new_stem}.toml"
    path.write_bytes(data if data is not None else text.encode("utf-8"))
    return Mutation(kind, mutation, path.name, detail)


HF_REQUIRED = ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size",
               "vocab_size", "max_position_embeddings", "model_type")
HF_CONFIG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
             "num_attention_heads": 14, "num_key_value_heads": 2, "num_hidden_layers": 24,
             "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768,
             "tie_word_embeddings": True}


def _mutate_hf_config(rng: Any, out_dir: Path) -> Mutation:
    cfg = dict(HF_CONFIG)
    key = rng.choice(HF_REQUIRED)
    how = rng.choice(["missing", "null", "string", "negative", "float", "list"])
    if how == "missing":
        del cfg[key]
    else:
        cfg[key] = {"null": None, "string": "many", "negative": -4, "float": 1.5,
                    "list": [1]}[how]
    d = out_dir / "hfmodel"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return Mutation("hf-config", "hf_config_missing", "config.json", f"{key}:{how}")


# Mutations after which the file is always invalid; "zero" and "huge" may still be in range
# (then the command must run cleanly on the odd value).
ALWAYS_BAD = frozenset(MUTATIONS) - {"zero", "huge"}


def catalog_argv(m: Mutation, cat_dir: Path) -> list[str]:
    """A command that loads the catalog with the mutated file and, when the file is still
    valid, uses the mutated spec."""
    c = ["--catalog", str(cat_dir), "--json"]
    ev = ["evaluate", "--schedule", "heteroreason", *c]
    return {
        "hf-config": ["roofline", "--model", str(cat_dir / "hfmodel" / "config.json"),
                      "--device", "rtx-3090", "--json"],
        "gpu": ["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "fuzz-gpu", *c],
        "fpga": ["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "fuzz-fpga", *c],
        "gpu-serving": ["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090",
                        "--serving", "fuzz-gpu-serving", *c],
        "fpga-engine": [*ev, "--system", "paper-config1-u280", "--scenario", "math500",
                        "--set", "draft_engine=fuzz-fpga-engine"],
        "model": ["roofline", "--model", "fuzz-model", "--device", "rtx-3090", *c],
        "workload": [*ev, "--system", "paper-config1-u280", "--scenario", "fuzz-workload"],
        "system": [*ev, "--system", "fuzz-system", "--scenario", "math500"],
    }.get(m.kind, ["catalog", "boards", *c])


def catalog_verdict(m: Mutation, res: CliResult) -> tuple[str | None, str]:
    """Judge a CLI run on a mutated catalog: (what is wrong or None, category). Valid: exit 0
    with finite JSON for a mutation that may leave the file valid; otherwise one error line,
    exit 2 or 3 naming the file, or exit 4 (infeasible) for a valid but odd value."""
    if res.traceback:
        return f"traceback: {res.err.strip()[-200:]}", "traceback"
    if res.rc == 0:
        if m.mutation in ALWAYS_BAD:
            return "accepted a malformed file", f"{m.mutation}: accepted"
        try:
            strict_json(res.out)
        except ValueError as e:
            return f"non-finite JSON: {e}", f"{m.mutation}: accepted"
        return None, f"{m.mutation}: accepted (value in range)"
    line = one_error_line(res)
    kind = f"{m.mutation}: one-line error, exit {res.rc}"
    if line is None:
        return f"not one error line: {res.err.strip()[-200:]}", kind
    if res.rc == 4:
        return (None if m.mutation in ("zero", "huge") else f"exit 4: {line}"), kind
    if res.rc not in (2, 3):
        return f"exit {res.rc}: {line}", kind
    return (None if m.file in line else f"file not named: {line}"), kind


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity."""
    def bad(name: str) -> Any:
        raise ValueError(f"non-finite {name} in JSON output")
    return json.loads(text, parse_constant=bad)


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# --------------------------------------------------------------------------- command lines

SUBCOMMANDS = ("catalog", "roofline", "evaluate", "simulate", "reproduce", "sweep", "optimize",
               "studies", "export")
FLAGS = ("--system", "--design", "--scenario", "--schedule", "--set", "--json",
         "--catalog", "--model", "--device", "--precision", "--serving", "--context",
         "--prompt-tokens", "--clock-mhz", "--tp", "--problems", "--seed", "--trace",
         "--trials", "--timeout", "--storage", "--study-name", "--objective", "--space",
         "--min-accuracy", "--max-latency", "--max-power-w", "--out", "--force", "--study",
         "--trial", "--markdown", "--html", "--version", "-h", "--bogus")
JUNK = ("", "-1", "0", "nan", "inf", "-inf", "1e999", "abc", "../..", "/", "--", "-",
        "paper-config1-u280", "math500", "u280", "rtx-3090", "qwen2.5-0.5b-instruct",
        "accept_threshold=2", "accept_threshold=nan", "x=y", "=", "step_ahead=maybe",
        "fpga.clock_mhz=-5", "target_tp=0", "ünï", "a\x00b", "99999999999999999999",
        "heteroreason", "sqlite:///", "postgresql://nohost:1/x", "%s", "{}", "'")
TEMPLATES = (
    ["catalog", "boards"],
    ["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--context", "1024"],
    ["evaluate", "--system", "paper-config1-u280", "--scenario", "math500", "--schedule",
     "heteroreason", "--set", "accept_threshold=0.5"],
    ["export", "--system", "paper-config1-3090", "--out", "bundle"],
    ["studies", "--storage", "sqlite:///studies.db"],
    ["export", "--study", "nope", "--storage", "sqlite:///studies.db", "--out", "b"],
)


def random_argv(rng: Any) -> list[str]:
    """A command line: half of the time a valid one with one value replaced by junk and junk
    flags appended, else a random subcommand (sometimes a junk one), flags and junk values."""
    if rng.random() < 0.5:
        argv = list(rng.choice(TEMPLATES))
        i = rng.randrange(len(argv))
        argv[i] = rng.choice(JUNK) if rng.random() < 0.7 else rng.choice(FLAGS)
        for _ in range(rng.randint(0, 2)):
            argv += [rng.choice(FLAGS), rng.choice(JUNK)][: rng.randint(1, 2)]
        return argv
    argv: list[str] = []
    if rng.random() < 0.9:
        argv.append(rng.choice(SUBCOMMANDS) if rng.random() < 0.9 else rng.choice(JUNK))
    for _ in range(rng.randint(0, 6)):
        r = rng.random()
        if r < 0.55:
            argv.append(rng.choice(FLAGS))
            if rng.random() < 0.8:
                argv.append(rng.choice(JUNK))
        elif r < 0.85:
            argv.append(rng.choice(JUNK))
        else:
            argv.append(rng.choice(FLAGS) + "=" + rng.choice(JUNK))
    return argv


# Commands whose valid command lines run for long (a search, the paper reproduction, a
# 5000-problem simulation): a command line of theirs that parses is not run, only parsed.
LONG_RUNNING = ("sweep", "optimize", "reproduce", "simulate")


def run_random_argv(argv: Sequence[str], cwd: Path) -> CliResult | None:
    """Run a random command line in `cwd` (where any file it names is created); None when it
    parsed and belongs to a long-running command (not run)."""
    from dse.cli import build_parser

    probe = run_parse(argv)
    if probe is None:
        ns = build_parser().parse_args(list(argv))
        if ns.command in LONG_RUNNING:
            return None
    return run_cli(argv, cwd)


def run_parse(argv: Sequence[str]) -> CliResult | None:
    """argparse alone: None when the command line parses, else its exit code and output."""
    from dse.cli import build_parser

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(list(argv))
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            return CliResult(rc, out.getvalue(), err.getvalue())
    return None


# ------------------------------------------------------------------------------ small space

# A design space small enough that one `dse optimize` trial takes tens of milliseconds: the
# default space (scenarios/spaces/default.toml) with one draft model, two draft devices and
# two target GPUs.
SMALL_SPACE = """\
schema_version = 1
kind = "space"
name = "small"
description = "hardening tests: a small slice of the default space"
max_context_tokens = 4096
lifetime_years = 3.0
usd_per_kwh = 0.15

[workloads]
math500 = 1.0

[draft]
models = ["qwen2.5-0.5b-instruct"]
gpus = ["rtx-3090"]
gpu_precisions = ["bf16"]
gpu_serving = ["vllm-cudagraph"]
fpgas = ["u280"]
fpga_precisions = ["w8a8"]
fpga_engines = ["flexllm"]
fpga_clock_MHz = [200.0, 300.0]
fpga_mac_lanes = [2048]

[prm]
models = ["qwen2.5-math-prm-7b"]
gpus = ["rtx-3090"]
precisions = ["bf16"]
serving = ["vllm-cudagraph"]

[target]
models = ["qwen2.5-math-7b-instruct"]
gpus = ["rtx-3090", "a100-80gb-pcie"]
tp = [1]
precisions = ["bf16"]
serving = ["vllm-cudagraph"]

[algorithm]
accept_threshold = { start = 0.5, stop = 0.9, step = 0.1 }
backtrack_threshold = [0.5, 0.7]
max_backtracks = [0, 5]
backtrack_window = [3]
step_ahead = [false, true]
shadow_sync = [false, true]

[constraints]
min_accuracy = 0.0

[sources]
max_context_tokens = "RSD budget (as scenarios/spaces/default.toml)"
lifetime_years = "assumption: as scenarios/spaces/default.toml"
usd_per_kwh = "assumption: as scenarios/spaces/default.toml"
"""


def write_small_space(path: Path, **replace: str) -> Path:
    """SMALL_SPACE with some lines replaced: {'models = [\"qwen2.5-0.5b-instruct\"]': ...}."""
    text = SMALL_SPACE
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")
    return path
