"""Why a design is slower, or spends more energy per token, than a baseline: which role's
critical-path time grew (and what made it grow: a slower device, another model or precision,
a schedule flag), and which device's energy grew (its idle draw over a longer problem, or its
work). Sentences for the dashboard, from two designs and their closed-form reports.
"""

from __future__ import annotations

from dse.engine.report import DEVICES, Report
from dse.model.design import Design
from dse.model.schedules import FLAGS
from dse.views.figures import energy_split

ROLE_LABELS = {"draft": "draft", "prm": "PRM", "target": "target", "link": "link",
               "init": "prompt prefill"}
FLAG_LABELS = {"backtracking": "backtracking", "step_ahead": "step-ahead speculation (T2)",
               "shadow_sync": "shadow sync (T1)"}
SIGNIFICANT = 0.005  # a role's change counts when it is at least 0.5% of the latency


def _where(d: Design, role: str) -> str:
    """The device, model and precision a role runs (a judging target's for the verifier)."""
    p = getattr(d, role)
    return f"{p.device.name} running {p.model.name} in {p.precision.name}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _placement_key(d: Design, role: str) -> tuple[str, ...] | None:
    if role not in d.roles:
        return None
    p = getattr(d, role)
    return (p.device.name, p.model.name, p.precision.name, p.serving, str(p.tp))


def _placement_differs(a: Design, b: Design, role: str) -> bool:
    return _placement_key(a, role) != _placement_key(b, role)


def _role_reason(a: Design, b: Design, role: str, ctx_tokens: float, step_tokens: float,
                 name: str) -> str | None:
    """What makes one role's time differ, in words (None: only the schedule)."""
    if (role not in ("draft", "prm", "target") or role not in a.roles or role not in b.roles
            or not _placement_differs(a, b, role)):
        return None
    pa, pb = getattr(a, role), getattr(b, role)
    if role == "prm":  # the PRM scores a step: one prefill pass
        ta = float(pa.prefill_s(step_tokens, ctx_tokens))
        tb = float(pb.prefill_s(step_tokens, ctx_tokens))
        what = f"scores a {step_tokens:.0f}-token step in"
    else:
        ta, tb = float(pa.decode_token_s(ctx_tokens)), float(pb.decode_token_s(ctx_tokens))
        what = "decodes a token in"
    return (f"the {ROLE_LABELS[role]} {what} {ta * 1e3:.2f} ms on {_where(a, role)} vs "
            f"{tb * 1e3:.2f} ms on {_where(b, role)} in {name}")


def _flag_reason(a: Design, b: Design, name: str) -> str | None:
    diff = [f"{FLAG_LABELS[f]} {'on' if getattr(a.schedule, f) else 'off'} here, "
            f"{'on' if getattr(b.schedule, f) else 'off'} in {name}"
            for f in FLAGS if getattr(a.schedule, f) != getattr(b.schedule, f)]
    return "the schedules differ: " + "; ".join(diff) if diff else None


def explain_vs_baseline(design: Design, report: Report, base: Design, base_report: Report,
                        name: str, *, prompt_tokens: float, step_tokens: float) -> list[str]:
    """Sentences saying why `design` is slower and/or spends more energy per token than the
    baseline `name` (empty when it is neither). Times per token are taken at the problem's
    mid context (the prompt plus half of the tokens a problem writes)."""
    out = []
    lat, blat = report.latency_s_per_problem, base_report.latency_s_per_problem
    if lat > blat:
        delta = {r: float(report.latency_breakdown_s[r]) - float(base_report.latency_breakdown_s[r])
                 for r in report.latency_breakdown_s}
        grew = sorted((r for r, v in delta.items() if v > SIGNIFICANT * lat),
                      key=lambda r: -delta[r])
        fell = sorted((r for r, v in delta.items() if v < -SIGNIFICANT * lat),
                      key=lambda r: delta[r])
        ctx = prompt_tokens + report.tokens_per_problem / 2
        sentence = (f"{lat / blat - 1:.1%} slower than {name} ({lat:.3f} s vs {blat:.3f} s "
                    "per problem)")
        if grew:
            sentence += ": on the critical path, time grew for " + _and(
                [f"the {ROLE_LABELS[r]} (+{delta[r]:.3f} s)" for r in grew])
        if fell:
            sentence += (", and fell for " if grew else ": on the critical path, time fell "
                         "for ") + _and([f"the {ROLE_LABELS[r]} ({delta[r]:.3f} s)"
                                        for r in fell])
        sentence += "."
        reasons = [x for r in grew
                   if (x := _role_reason(design, base, r, ctx, step_tokens, name))]
        if (flags := _flag_reason(design, base, name)) is not None:
            reasons.append(flags)
        if reasons:
            sentence += " Because " + "; ".join(reasons) + "."
        out.append(sentence)
    e, be = report.j_per_token, base_report.j_per_token
    if e > be:
        sa, sb = energy_split(design, report), energy_split(base, base_report)
        zero = {"total_j": 0.0, "idle_j": 0.0}
        dev = {r: sa.get(r, zero)["total_j"] - sb.get(r, zero)["total_j"] for r in DEVICES
               if r in sa or r in sb}
        worst = max(dev, key=lambda r: dev[r])
        idle = sa.get(worst, zero)["idle_j"] - sb.get(worst, zero)["idle_j"]
        busy = {n: float(rep.devices[worst]["busy_s"]) if worst in rep.devices else 0.0
                for n, rep in (("a", report), ("b", base_report))}
        board = (getattr(design, worst).device.name if worst in design.roles
                 else getattr(base, worst).device.name)
        sentence = (f"{e / be - 1:.1%} more energy per token than {name} ({e:.3f} vs {be:.3f} "
                    f"J/token): the {ROLE_LABELS[worst]}'s {board} "
                    f"uses {dev[worst]:.1f} J more per problem ({idle:+.1f} J of it idle draw "
                    f"over the {lat:.2f} s problem, {dev[worst] - idle:+.1f} J its work: busy "
                    f"{busy['a']:.2f} s per problem vs {busy['b']:.2f} s)")
        wa, wb = report.wasted_energy_share, base_report.wasted_energy_share
        if wa > wb + 0.01:
            sentence += (f"; work a verdict discards (step-ahead drafts, target prefetch) is "
                         f"{wa:.0%} of the energy here vs {wb:.0%} in {name}")
        tok, btok = report.tokens_per_problem, base_report.tokens_per_problem
        if abs(tok / btok - 1) > 0.01:
            sentence += f"; a problem writes {tok:.0f} tokens here vs {btok:.0f}"
        out.append(sentence + ".")
    return out
