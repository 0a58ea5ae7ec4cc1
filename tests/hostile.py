"""Generators of hostile and extreme inputs, one class each of the Reliability issue's list, and
the verdict every CLI run on them must meet. Shared by tests/test_hostile.py and
scripts/reliability_report.py.

A case is a command line (and the files it reads, written into a fresh directory) with the exit
codes it may end with: a refused input is one stderr line, exit 2 (a flag) or 3 (a file), naming
the flag or the file (with its line, for JSONL) and the key; an accepted one exits 0 with finite
JSON output. Nothing may end in a traceback, and no input file may change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzzing import (
    CATALOG_FILES,
    HF_CONFIG,
    ROOT,
    CliResult,
    _numeric_keys,
    _set_key,
    one_error_line,
    run_cli,
    strict_json,
    write_small_space,
)

SYSTEM = "paper-config1-u280"
EVAL = ["evaluate", "--system", SYSTEM, "--scenario", "gsm8k", "--schedule", "heteroreason",
        "--json"]
SIM = ["simulate", "--system", SYSTEM, "--scenario", "gsm8k", "--problems", "30", "--json"]
SET_KEYS = ("accept_threshold", "backtrack_threshold", "max_backtracks", "backtrack_window",
            "max_context_tokens", "fpga_clock_MHz", "fpga_memory_channels", "fpga_mac_lanes",
            "target_tp", "prm_tp")
WRONG_VALUES: tuple[Any, ...] = ([1, 2], {"a": 1}, None, "many", True, [], {})


@dataclass
class Case:
    cls: str  # the input class
    argv: list[str]
    expect: frozenset[int]  # exit codes allowed
    names: tuple[str, ...] = ()  # what the error line must name (file, key), when refused
    inputs: tuple[Path, ...] = ()  # files that must be unchanged afterwards
    then: list[str] | None = None  # a second command that must succeed (round trips)
    detail: str = ""
    snapshot: dict[Path, bytes] = field(default_factory=dict)


def _huge_int(rng: Any) -> str:
    return "1" + "0" * rng.choice([19, 30, 54, 308, 400, 1000, 4000])


def _deep(depth: int, leaf: str, open_: str, close: str) -> str:
    return open_ * depth + leaf + close * depth


def _catalog_copy(rng: Any, d: Path) -> tuple[str, str, Path]:
    kind = rng.choice(sorted(CATALOG_FILES))
    src = ROOT / CATALOG_FILES[kind]
    text = _set_key(src.read_text(encoding="utf-8"), "name", json.dumps(f"hostile-{kind}"))
    return kind, text, d / f"hostile-{kind}.toml"


def huge_int_catalog(rng: Any, d: Path) -> Case:
    kind, text, path = _catalog_copy(rng, d)
    key = rng.choice(_numeric_keys(text))
    path.write_text(_set_key(text, key, _huge_int(rng)), encoding="utf-8")
    return Case("huge integer: catalog TOML", ["catalog", "boards", "--catalog", str(d)],
                frozenset({3}), (path.name, key), (path,), detail=f"{kind}.{key}")


def huge_int_config(rng: Any, d: Path) -> Case:
    cfg = dict(HF_CONFIG)
    key = rng.choice(["hidden_size", "num_attention_heads", "num_hidden_layers",
                      "intermediate_size", "vocab_size", "max_position_embeddings"])
    path = d / "config.json"
    path.write_text(json.dumps(cfg).replace(f'"{key}": {cfg[key]}', f'"{key}": {_huge_int(rng)}'),
                    encoding="utf-8")
    return Case("huge integer: config.json", ["roofline", "--model", str(path), "--device",
                                              "rtx-3090", "--json"],
                frozenset({3}), ("config.json", key), (path,), detail=key)


def huge_int_set(rng: Any, d: Path) -> Case:
    key = rng.choice(SET_KEYS)
    value = rng.choice([_huge_int(rng), "-" + _huge_int(rng), "1e400", "-1e400", "1e308"])
    return Case("huge number: --set", [*EVAL, "--set", f"{key}={value}"], frozenset({2}),
                ("--set", key), detail=f"{key}={value[:12]}")


def huge_int_flag(rng: Any, d: Path) -> Case:
    big = rng.choice([_huge_int(rng), "1e400", "-" + _huge_int(rng)])
    argv, flag = rng.choice([
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--context", big],
         "--context"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--prompt-tokens",
          big], "--prompt-tokens"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090", "--tp", big],
         "--tp"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--clock-mhz",
          big], "--clock-mhz"),
        ([*SIM[:-3], "--problems", big], "--problems"),
        ([*SIM, "--seed", big], "--seed"),
        (["sweep", "--max-latency", big], "--max-latency"),
        (["sweep", "--max-power-w", big], "--max-power-w"),
        (["sweep", "--min-accuracy", big], "--min-accuracy"),
    ])
    # a clock of 10**k MHz is a number outside every board's range: infeasible (exit 4)
    if flag == "--clock-mhz":
        return Case("huge number: flag", argv, frozenset({2, 4}), detail=flag)
    # a finite upper bound of 10**k W or s is a valid (if loose) constraint: the search runs
    if flag in ("--max-latency", "--max-power-w"):
        return Case("huge number: flag", argv, frozenset({0, 2}), detail=flag)
    return Case("huge number: flag", argv, frozenset({2}), (flag,), detail=flag)


def wrong_structure_catalog(rng: Any, d: Path) -> Case:
    kind, text, path = _catalog_copy(rng, d)
    key = rng.choice(["kind", "name", "description", "schema_version", *_numeric_keys(text)])
    value = rng.choice(['["gpu"]', "{ a = 1 }", "[1, 2]", '"x"' if key not in (
        "kind", "name", "description") else "[]", "true"])
    path.write_text(_set_key(text, key, value), encoding="utf-8")
    return Case("wrong structure: catalog TOML", ["catalog", "boards", "--catalog", str(d)],
                frozenset({3}), (path.name,), (path,), detail=f"{kind}.{key}={value}")


def wrong_structure_config(rng: Any, d: Path) -> Case:
    cfg: dict[str, Any] = dict(HF_CONFIG)
    key = rng.choice(["architectures", "model_type", "hidden_size", "num_key_value_heads",
                      "tie_word_embeddings", "head_dim"])
    cfg[key] = rng.choice([v for v in ("Qwen2ForCausalLM", [1, 2], {"a": 1}, [["x"]], 3.5,
                                       "many", None) if v != cfg.get(key)])
    path = d / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    # some types are legal for some keys (a null head_dim is derived): then it must run cleanly
    return Case("wrong structure: config.json", ["roofline", "--model", str(path), "--device",
                                                 "rtx-3090", "--json"],
                frozenset({0, 3}), ("config.json",), (path,), detail=f"{key}={cfg[key]!r}")


def _trace(d: Path) -> tuple[Path, list[dict[str, Any]]]:
    path = d / "trace.jsonl"
    res = run_cli([*SIM, "--trace-out", str(path)])
    assert res.rc == 0, res.err
    return path, [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_records(path: Path, records: list[Any]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def wrong_structure_trace(rng: Any, d: Path) -> Case:
    path, records = _trace(d)
    i = rng.randrange(len(records))
    key = rng.choice(["problem", "step", "decision", "draft_tokens", "draft_reward"])
    records[i][key] = rng.choice([v for v in WRONG_VALUES if not (
        v is None and key in ("step", "draft_reward"))])
    _write_records(path, records)
    return Case("wrong structure: trace field", [*SIM, "--trace", str(path)], frozenset({3}),
                (f"{path}:{i + 1}", key), (path,), detail=f"{key}={records[i][key]!r}")


def deep_nesting(rng: Any, d: Path) -> Case:
    depth = rng.choice([17, 50, 300, 2000, 20000])
    where = rng.choice(["toml", "json", "trace"])
    if where == "toml":
        _, text, path = _catalog_copy(rng, d)
        path.write_text(text.replace("\n[sources]", f"\ndeep = {_deep(depth, '1', '[', ']')}"
                                     "\n[sources]", 1), encoding="utf-8")
        return Case("deep nesting", ["catalog", "boards", "--catalog", str(d)], frozenset({3}),
                    (path.name,), (path,), detail=f"toml {depth}")
    if where == "json":
        path = d / "config.json"
        path.write_text(json.dumps(HF_CONFIG)[:-1] + f', "deep": {_deep(depth, "1", "[", "]")}}}',
                        encoding="utf-8")
        return Case("deep nesting", ["roofline", "--model", str(path), "--device", "rtx-3090"],
                    frozenset({3}), ("config.json",), (path,), detail=f"json {depth}")
    path, records = _trace(d)
    lines = [json.dumps(r) for r in records]
    lines[0] = lines[0][:-1] + f', "deep": {_deep(depth, "1", "[", "]")}}}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Case("deep nesting", [*SIM, "--trace", str(path)], frozenset({3}), (f"{path}:1",),
                (path,), detail=f"trace {depth}")


def caps(rng: Any, d: Path) -> Case:
    key = rng.choice(["max_backtracks", "backtrack_window"])
    value = rng.choice([65, 100, 10**6, 10**12, 2**53])
    where = rng.choice(["set", "design", "space"])
    if where == "set":
        return Case("cap: backtracks and window", [*EVAL, "--set", f"{key}={value}"],
                    frozenset({2}), ("--set", key), detail=f"--set {key}={value}")
    if where == "design":
        src = (ROOT / "scenarios/systems" / f"{SYSTEM}.toml").read_text(encoding="utf-8")
        path = d / "system.toml"
        path.write_text(_set_key(src, key, str(value)), encoding="utf-8")
        return Case("cap: backtracks and window", ["evaluate", "--design", str(path),
                                                   "--scenario", "gsm8k", "--json"],
                    frozenset({3}), ("system.toml", key), (path,), detail=f"file {key}={value}")
    path = write_small_space(d / "space.toml")
    text = path.read_text(encoding="utf-8")
    text = re.sub(rf"(?m)^{key}\s*=.*$", f"{key} = [{value}]", text, count=1)
    path.write_text(text, encoding="utf-8")
    return Case("cap: backtracks and window", ["sweep", "--space", str(path), "--json"],
                frozenset({3}), ("space.toml", key), (path,), detail=f"space {key}={value}")


def trace_values(rng: Any, d: Path) -> Case:
    path, records = _trace(d)
    i = rng.randrange(len(records))
    key, value = rng.choice([("draft_reward", 1.5), ("draft_reward", -0.2),
                             ("draft_reward", 1e308), ("draft_tokens", 10**15),
                             ("draft_tokens", 0), ("draft_tokens", -3), ("problem", -1),
                             ("decision", "maybe"), ("step", -1)])
    records[i][key] = value
    _write_records(path, records)
    return Case("trace: values out of range", [*SIM, "--trace", str(path)], frozenset({3}),
                (f"{path}:{i + 1}", key), (path,), detail=f"{key}={value}")


def trace_round_trip(rng: Any, d: Path) -> Case:
    path, records = _trace(d)
    for r in rng.sample(records, k=min(len(records), rng.randrange(1, 8))):
        r.pop("draft_reward", None)
        if "target_reward" in r:
            r["target_reward"] = None
    _write_records(path, records)
    out = d / "again.jsonl"
    return Case("round trip: --trace-out of a replayed trace", [*SIM, "--trace", str(path),
                                                                "--trace-out", str(out)],
                frozenset({0}), inputs=(path,), then=[*SIM, "--trace", str(out)])


def outputs_over_inputs(rng: Any, d: Path) -> Case:
    path, _ = _trace(d)
    flag = rng.choice(["--trace-out", "--timeline-out"])
    return Case("writes over an input", [*SIM, "--trace", str(path), flag, str(path)],
                frozenset({2}), (flag,), (path,), detail=flag)


def space_files(rng: Any, d: Path) -> Case:
    """Names, precisions and grid sizes a space file may get wrong."""
    accept = "accept_threshold = { start = 0.5, stop = 0.9, step = 0.1 }"
    key, replace = rng.choice([
        ("draft.gpu_precisions", {'gpu_precisions = ["bf16"]':
                                  f'gpu_precisions = ["{rng.choice(["bf17", "int3", "W8A8"])}"]'}),
        ("draft.fpga_precisions", {'fpga_precisions = ["w8a8"]': 'fpga_precisions = ["fp64"]'}),
        ("name", {'name = "small"': f'name = {json.dumps(rng.choice(["A", "../x", "", "a b"]))}'}),
        ("algorithm.accept_threshold", {accept: "accept_threshold = { start = 0.0, stop = 1.0, "
                                        f"step = {rng.choice(['1e-320', '1e-9', '1e-5'])} }}"}),
        ("algorithm", {accept: "accept_threshold = { start = 0.0, stop = 1.0, step = 1e-3 }",
                       "backtrack_threshold = [0.5, 0.7]":
                       "backtrack_threshold = { start = 0.0, stop = 1.0, step = 1e-3 }"}),
        ("draft.gpus", {'gpus = ["rtx-3090"]': 'gpus = ["rtx-9090"]'}),
    ])
    path = write_small_space(d / "space.toml", **replace)
    return Case("space files: names, precisions, grid size", ["sweep", "--space", str(path),
                                                              "--json"],
                frozenset({3}), ("space.toml", key), (path,), detail=key)


def extreme_values(rng: Any, d: Path) -> Case:
    """Valid but extreme knobs: the report is finite, or the design refused in one line."""
    sets = rng.sample([
        f"accept_threshold={rng.choice(['0', '1', '1e-12', '0.999999'])}",
        f"backtrack_threshold={rng.choice(['0', '1', '1e-300'])}",
        f"max_backtracks={rng.choice(['0', '64'])}",
        f"backtrack_window={rng.choice(['1', '64'])}",
        f"max_context_tokens={rng.choice(['1', '2', '10000000'])}",
        f"fpga.clock_mhz={rng.choice(['50', '500', '1e-9', '1e18'])}",
        f"fpga.mac_lanes={rng.choice(['1', '4096', '1000000'])}",
        f"fpga.channels={rng.choice(['1', '32', '1000'])}",
    ], k=rng.randrange(1, 4))
    argv = [*rng.choice([EVAL, SIM]), *(x for s in sets for x in ("--set", s))]
    return Case("extreme valid values", argv, frozenset({0, 1, 2, 4}), detail=" ".join(sets))


def unwritable_dir(d: Path) -> Path | None:
    """A directory in which this process cannot create files (a mode-0555 one, or as root a
    kernel file system that refuses even root), or None."""
    import os

    ro = d / "read-only"
    ro.mkdir(exist_ok=True)
    ro.chmod(0o555)
    for c in (ro, Path("/sys"), Path("/proc")):
        probe = c / ".dse-hostile-probe"
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError:
            return c
        probe.unlink()
    return None


def _special_file(rng: Any, d: Path, cap: int) -> tuple[str, Path]:
    """(kind, path) of a file no command may read: a device, a directory, a named FIFO, a
    socket, a file past the size cap (sparse), a dangling link, non-UTF-8 bytes."""
    import os
    import socket

    kind = rng.choice(["/dev/zero", "/dev/urandom", "/dev/null", "directory", "fifo", "socket",
                       "oversized", "dangling link", "not UTF-8"])
    if kind.startswith("/dev/"):
        return kind, Path(kind)
    p = d / f"special-{kind.replace(' ', '-')}.toml"
    if kind == "directory":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "oversized":
        p.write_text("# a comment\n", encoding="utf-8")
        os.truncate(p, cap + 1 + rng.randrange(1 << 20))
    elif kind == "dangling link":
        p.symlink_to(d / "nowhere.toml")
    else:
        p.write_bytes(b'name = "\xff\xfe"\n' + bytes(rng.randrange(256) for _ in range(64)))
    return kind, p


def special_input_files(rng: Any, d: Path) -> Case:
    """Every option that reads a file, given one that is no regular file or is too big."""
    from dse.core.limits import MAX_SPEC_FILE_BYTES, MAX_TRACE_FILE_BYTES

    option = rng.choice(["--design", "--trace", "--space", "--scenario", "config.json",
                         "catalog member"])
    kind, p = _special_file(rng, d, MAX_TRACE_FILE_BYTES if option == "--trace"
                            else MAX_SPEC_FILE_BYTES)
    if option in ("--scenario", "config.json", "catalog member") or kind.startswith("/dev/"):
        link = d / ("config.json" if option == "config.json" else "member.toml")
        if option == "catalog member":
            link = d / "cat" / "member.toml"
            link.parent.mkdir()
        if kind == "directory" and option in ("config.json", "catalog member"):
            kind, p = "/dev/zero", Path("/dev/zero")  # a directory there is walked, not read
        link.symlink_to(p)
        p = link
    argv = {"--design": [*EVAL[:1], "--design", str(p), *EVAL[3:]],
            "--trace": [*SIM, "--trace", str(p)],
            "--space": ["sweep", "--space", str(p), "--json"],
            "--scenario": ["evaluate", "--system", SYSTEM, "--scenario", str(p), "--json"],
            "config.json": ["roofline", "--model", str(p), "--device", "rtx-3090", "--json"],
            "catalog member": ["catalog", "boards", "--catalog", str(d / "cat")]}[option]
    return Case("special and oversized input files", argv, frozenset({3}), (p.name,),
                detail=f"{option} {kind}")


FILE_OUTPUT_FLAGS = (("simulate", "--trace-out"), ("simulate", "--timeline-out"),
                     ("reproduce", "--markdown"), ("reproduce", "--html"))
DIR_OUTPUT_FLAGS = (("sweep", "--out"), ("optimize", "--out"), ("export", "--out"),
                    ("optimize", "--storage"))


def unusable_output_paths(rng: Any, d: Path) -> Case:
    """An output path no command can write, refused before computing (exit 2, the flag)."""
    f = d / "a-file"
    f.write_text("x\n", encoding="utf-8")
    ro = unwritable_dir(d)
    command, flag = rng.choice([*FILE_OUTPUT_FLAGS, *DIR_OUTPUT_FLAGS])
    is_file = (command, flag) in FILE_OUTPUT_FLAGS
    kinds = ["under a file", "missing parent" if is_file else "a file",
             "a directory" if is_file else "files there", "/dev/null"]
    kinds += ["unwritable"] * (ro is not None)
    kind = rng.choice(kinds)
    path = {"under a file": f / "x" / "y", "missing parent": d / "none" / "x.json",
            "a file": f, "a directory": d, "/dev/null": Path("/dev/null"),
            "unwritable": (ro or d) / "out", "files there": d / "out"}[kind]
    if kind == "files there":
        path.mkdir()
        (path / ("manifest.json" if rng.random() < 0.5 else "best.toml")).write_text(
            "{}", encoding="utf-8")
        if command == "export":
            (path / "notes.txt").write_text("mine", encoding="utf-8")
    base = {"simulate": SIM, "reproduce": ["reproduce", "--json"],
            "sweep": ["sweep", "--json"], "export": ["export", "--system", SYSTEM, "--json"],
            "optimize": ["optimize", "--trials", "2", "--json"]}[command]
    value = str(path)
    if flag == "--storage":  # "a file" there: a database under it; "files there": a directory
        value = f"sqlite:///{f / 's.db' if kind == 'a file' else path}"
    elif command == "optimize":
        base = [*base, "--storage", f"sqlite:///{d / 's.db'}"]
    return Case("unusable output paths", [*base, flag, value], frozenset({2}), (flag,),
                inputs=(f,), detail=f"{command} {flag} {kind}")


def compare_designs(rng: Any, d: Path) -> Case:
    """`dse compare` with a hostile DESIGN argument among valid ones."""
    bad = rng.choice([
        "accept_threshold=nan", "accept_threshold=inf", "accept_threshold=-1",
        "accept_threshold=2", "accept_threshold=1e400", "accept_threshold=x",
        f"max_backtracks={_huge_int(rng)}", "max_backtracks=65", "max_backtracks=1.5",
        "warp=9", "schedule=fast", "backtracking=maybe", "accept_threshold", "=1",
        "backtrack_window=0", "colocate=draft+prm", "target_tp=1000", "step_ahead=",
        "fpga.clock_mhz=abc", "max_context_tokens=-5"])
    n = rng.randrange(2, 5)
    designs = [rng.choice([SYSTEM, "paper-config2-v80", f"{SYSTEM}:accept_threshold=0.85"])
               for _ in range(n)]
    i = rng.randrange(n)
    designs[i] = f"{designs[i].split(':')[0]}:{bad}"
    return Case("compare: hostile DESIGN settings", ["compare", *designs, "--scenario",
                                                     "gsm8k", "--json"], frozenset({2}),
                (f"DESIGN #{i + 1}",), detail=designs[i])


def options_twice(rng: Any, d: Path) -> Case:
    """An option that takes one value given twice: a usage error, never the last one winning."""
    argv, flag = rng.choice([
        (["evaluate", "--system", SYSTEM, "--system", "paper-config2-v80"], "--system"),
        (["evaluate", "--design", "a.toml", "--design", "b.toml"], "--design"),
        (["simulate", "--system", SYSTEM, "--system", SYSTEM], "--system"),
        ([*EVAL, "--scenario", "math500"], "--scenario"),
        (["export", "--system", SYSTEM, "--out", "a", "--out", "b"], "--out"),
        (["export", "--system", SYSTEM, "--out", "a", "--schedule", "rsd", "--schedule",
          "brsd"], "--schedule"),
        (["compare", SYSTEM, SYSTEM, "--scenario", "gsm8k", "--scenario", "gsm8k"],
         "--scenario"),
        (["serve", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090", "--rate", "1",
          "--rate", "2"], "--rate"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090", "--context",
          "8", "--context", "9"], "--context"),
        ([*SIM, "--seed", "1", "--seed", "2"], "--seed"),
        (["sweep", "--space", "a.toml", "--space", "b.toml"], "--space"),
        (["optimize", "--trials", "2", "--trials", "3"], "--trials"),
        (["studies", "--storage", "a", "--storage", "b"], "--storage"),
        (["reproduce", "--markdown", "a.md", "--markdown", "b.md"], "--markdown"),
        ([*EVAL, "--set", "accept_threshold=0.8", "--set", "accept_threshold=0.9"], "--set"),
    ])
    return Case("options given twice", argv, frozenset({2}), (flag, "given twice"),
                detail=flag)


GENERATORS: tuple[Callable[[Any, Path], Case], ...] = (
    huge_int_catalog, huge_int_config, huge_int_set, huge_int_flag, wrong_structure_catalog,
    wrong_structure_config, wrong_structure_trace, deep_nesting, caps, trace_values,
    trace_round_trip, outputs_over_inputs, space_files, extreme_values, special_input_files,
    unusable_output_paths, compare_designs, options_twice)


def hostile_case(rng: Any, d: Path) -> Case:
    """One case of a random class, its files written into the (empty) directory d."""
    case = rng.choice(GENERATORS)(rng, d)
    case.snapshot = {p: p.read_bytes() for p in case.inputs}
    return case


def run_case(case: Case, d: Path) -> CliResult:
    return run_cli(case.argv, cwd=d)


def verdict(case: Case, res: CliResult, d: Path) -> str | None:
    """What is wrong with a run of a case, or None."""
    if res.traceback or res.rc == -1:
        return f"traceback: {res.err.strip()[-300:]}"
    for p, before in case.snapshot.items():
        if not p.exists() or p.read_bytes() != before:
            return f"input {p.name} changed"
    if res.rc not in case.expect:
        return f"exit {res.rc} (expected {sorted(case.expect)}): {res.err.strip()[-200:]}"
    if res.rc == 0:
        if "--json" in case.argv:
            try:
                strict_json(res.out)
            except ValueError as e:
                return f"exit 0 with {e}"
        if case.then is not None:
            again = run_cli(case.then, cwd=d)
            if again.rc != 0 or again.traceback:
                return f"written output does not read back: {again.err.strip()[-200:]}"
            if "--json" in case.argv and strict_json(again.out) != strict_json(res.out):
                return "round trip changed the report"
        return None
    line = one_error_line(res)
    if line is None:
        # argparse prints its usage before the one error line: that is the flag's error
        lines = res.err.strip("\n").split("\n")
        if res.rc == 2 and lines and lines[-1].startswith("dse ") and lines[0].startswith(
                "usage:"):
            line = lines[-1]
        else:
            return f"not one error line: {res.err.strip()[-300:]}"
    missing = [n for n in case.names if n not in line]
    return f"does not name {missing}: {line}" if missing else None
