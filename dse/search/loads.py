"""A search's load (dse.search.at_load): the rate, the SLOs and the scheduler caps tried, from
the flags (--rate, --slo, --max-num-seqs) or a workload's [load] table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dse.core.limits import MAX_NUM_SEQS, MAX_RATE_PER_S, MIN_RATE_PER_S
from dse.errors import UsageError

TARGET_UTILISATION = 0.8  # a replica is sized to run at most 80% of its capacity: past it a
# queue's wait grows as 1 / (1 - u) (tests/test_serving.py shows the knee)
SLO_KEYS = ("ttft", "tpot", "e2el")
LOAD_KEYS = ("rate", "ttft_ms", "tpot_ms", "e2el_ms")  # a workload's [load] table


@dataclass(frozen=True)
class LoadSpec:
    """A search's load: Poisson arrivals at `rate` problems per second and SLOs (ms, None:
    none), from `source` (a flag or a workload's [load] table)."""

    rate: float
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None
    utilisation: float = TARGET_UTILISATION
    source: str = "--rate"
    # the scheduler's caps on running sequences each design is served with (vLLM's
    # max_num_seqs; empty: each GPU's vLLM default only): a search dimension
    max_num_seqs: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not (isinstance(self.rate, int | float) and math.isfinite(self.rate)
                and MIN_RATE_PER_S <= self.rate <= MAX_RATE_PER_S):
            raise UsageError(f"{self.source}: the rate must be a number of requests per "
                             f"second from {MIN_RATE_PER_S:g} to {MAX_RATE_PER_S:g}, got "
                             f"{self.rate!r}")
        for k in SLO_KEYS:
            v = getattr(self, f"{k}_ms")
            if v is not None and not (math.isfinite(v) and v > 0):
                raise UsageError(f"{self.source}: the {k} SLO must be a positive number of "
                                 f"milliseconds, got {v!r}")
        for cap in self.max_num_seqs:
            if not (isinstance(cap, int) and 1 <= cap <= MAX_NUM_SEQS):
                raise UsageError(f"--max-num-seqs: a cap is a whole number of sequences, "
                                 f"1-{MAX_NUM_SEQS}, got {cap!r}")
        if len(set(self.max_num_seqs)) != len(self.max_num_seqs):
            raise UsageError("--max-num-seqs: a cap given twice")

    @property
    def caps(self) -> tuple[int | None, ...]:
        """The caps each design is served with (None: the GPU's vLLM default)."""
        return self.max_num_seqs or (None,)

    @property
    def slo_text(self) -> str:
        got = [f"{k} {getattr(self, f'{k}_ms'):g} ms" for k in SLO_KEYS
               if getattr(self, f"{k}_ms") is not None]
        return ", ".join(got) or "none"

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms,
                "e2el_ms": self.e2el_ms, "target_utilisation": self.utilisation,
                "source": self.source, "max_num_seqs": list(self.max_num_seqs) or None}


def parse_slo(items: Sequence[str], source: str = "--slo") -> dict[str, float]:
    """SLOs as `ttft:MS,tpot:MS` or vLLM's `ttft:MS tpot:MS e2el:MS` (one item each);
    a bad item is one UsageError line naming it."""
    out: dict[str, float] = {}
    for item in items:
        for part in item.split(","):
            key, sep, ms = part.strip().partition(":")
            if not sep or key not in SLO_KEYS:
                raise UsageError(f"{source} {part!r}: expected KEY:MS with KEY one of "
                                 f"{', '.join(SLO_KEYS)} (e.g. ttft:500,tpot:50)")
            try:
                v = float(ms)
            except ValueError:
                raise UsageError(f"{source} {part!r}: {ms!r} is not a number of "
                                 "milliseconds") from None
            if not (math.isfinite(v) and v > 0):
                raise UsageError(f"{source} {part!r}: the bound must be a positive number of "
                                 "milliseconds")
            if key in out:
                raise UsageError(f"{source}: {key} given twice")
            out[key] = v
    return out


def load_spec(rate: float | None, slo: Sequence[str] | None, workload: Any,
              max_num_seqs: Sequence[int] = ()) -> LoadSpec | None:
    """The search's load: the flags, else the workload's [load] table (its `rate` and
    `ttft_ms`, `tpot_ms`, `e2el_ms`), else None (single stream); SLOs or caps without a rate
    are a UsageError. max_num_seqs: the caps tried (--max-num-seqs)."""
    caps = tuple(max_num_seqs)
    table = dict(getattr(workload, "load", None) or {})
    for k in table:
        if k not in LOAD_KEYS:
            from dse.errors import SpecError

            raise SpecError(workload.path, f"load.{k}", f"unknown key; valid: "
                            f"{', '.join(LOAD_KEYS)}")
    if table and "rate" not in table:
        from dse.errors import SpecError

        raise SpecError(workload.path, "load.rate", "a [load] table needs its rate "
                        "(problems per second)")
    slos = parse_slo(slo) if slo else {}
    if rate is None and table.get("rate") is not None:
        rate = float(table["rate"])
        src = f"{workload.name}'s [load]"
        if not slos:
            slos = {k: float(table[f"{k}_ms"]) for k in SLO_KEYS
                    if table.get(f"{k}_ms") is not None}
        return LoadSpec(rate, slos.get("ttft"), slos.get("tpot"), slos.get("e2el"),
                        source=src, max_num_seqs=caps)
    if rate is None:
        if slos:
            raise UsageError("--slo: SLOs bound a load; give --rate R (requests/s) too")
        if caps:
            raise UsageError("--max-num-seqs: caps are tried at a load; give --rate R "
                             "(requests/s) too")
        return None
    return LoadSpec(rate, slos.get("ttft"), slos.get("tpot"), slos.get("e2el"),
                    max_num_seqs=caps)
