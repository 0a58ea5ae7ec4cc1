"""The dashboard's glossary: each term of the tool and of the HeteroReason paper in one or two
sentences, for the Glossary page and for widget tooltips (`term_help`).

Definitions follow this tool's model (docs/model.md, docs/uncertainty.md) and the paper's
wording (its method and evaluation sections, and the explainer's summary of them). A term is
found by its name or an alias, ignoring case, `_` and `-` (`step_ahead` finds the step-ahead
entry), so every schedule preset and flag name is a key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    name: str
    definition: str
    aliases: tuple[str, ...] = ()

    @property
    def anchor(self) -> str:
        """The term's anchor on the Glossary page (`#t2-step-ahead-speculation`)."""
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


TERMS = (
    Term("latency per problem", "Seconds from a problem's prompt to its last committed token, "
         "the expected value over the workload's problems (the closed form): the critical "
         "path of the draft, PRM, target and link work, where the schedule overlaps them.",
         ("latency_s_per_problem", "latency")),
    Term("accuracy", "The share of problems answered correctly (%), from the workload's "
         "per-step quality model: the draft's accepted steps, the target's rewrites and the "
         "PRM's separation of good from bad steps, calibrated on the paper's Table III "
         "(docs/validation.md says for which pairs).", ()),
    Term("speed-up and energy gain", "A baseline's latency per problem (energy per token) "
         "divided by this design's: above 1, this design is faster (spends less energy per "
         "token). The What-if baselines are the paper's GPU systems: this design's models and "
         "thresholds with the draft on the PRM's GPU.",
         ("speedup", "speed-up", "energy gain", "energy_gain")),
    Term("goodput", "Committed tokens of the final reasoning chain per second of problem "
         "latency (tokens/s): discarded speculation and rejected draft steps do not count."),
    Term("p_accept (accept probability)", "The probability that the PRM accepts a draft step "
         "(scores it at least the accept threshold), from the workload's two Beta score "
         "distributions (good and bad steps) and the draft's per-step error rate; "
         "1 - p_accept is the rejection rate, typically below 30% in the paper.",
         ("p_accept", "accept probability")),
    Term("accept threshold", "The PRM score at or above which a draft step is committed (0.7 "
         "in the paper and RSD); below it the target rewrites the step. Higher values move "
         "accuracy toward the target's and add target calls.", ("accept_threshold",)),
    Term("backtrack threshold", "With backtracking, a target rewrite that the PRM scores "
         "below this (0.7 in the paper) triggers a backtrack while the problem's budget of "
         "max backtracks lasts.", ("backtrack_threshold",)),
    Term("max backtracks", "Backtracks allowed per problem (5 in the paper); past the budget a "
         "failing rewrite is kept.", ("max_backtracks",)),
    Term("backtrack window", "How many steps back the anchor of a backtrack may lie (the "
         "paper's examples: t-2, t-3).", ("backtrack_window",)),
    Term("backtracking", "When a target rewrite also scores below the backtrack threshold, "
         "return to the latest step the draft wrote and the PRM accepted without help (the "
         "anchor, within the backtrack window), discard the steps after it and let the target "
         "write an alternative. The schedule flag `backtracking`; on 3 GPUs alone it adds 2-5 "
         "accuracy points but runs at 0.68-0.93x rsd's speed."),
    Term("rsd", "Reward-guided speculative decoding at step level (Liao et al. 2025): the draft "
         "writes a step, the PRM scores it, the target rewrites rejected steps; forward only "
         "and sequential. Preset with backtracking, step-ahead and shadow sync off."),
    Term("brsd", "rsd with backtracking, run sequentially on three GPUs: the paper's weak "
         "baseline (preset: backtracking on, step-ahead and shadow sync off)."),
    Term("brsd_stepahead", "brsd with step-ahead speculation and target prefetch on the GPUs "
         "(T2 without T1): the paper's strong baseline, Table III's 'BRSD + system "
         "optimisations' (preset: backtracking and step-ahead on, shadow sync off)."),
    Term("heteroreason", "The paper's system: the draft on an FPGA, the PRM and the target on "
         "GPUs, with backtracking, step-ahead speculation and shadow sync (T1 + T2; preset "
         "with all three flags on)."),
    Term("T1 (shadow KV sync)", "The paper's prefill-decode disaggregation of the draft: the "
         "FPGA only decodes; the prompt is prefilled on a GPU and its KV cache migrated over "
         "PCIe once per problem, and after a reject the FPGA catches up by shadow sync instead "
         "of prefilling. Here: an FPGA draft under a schedule with `shadow_sync` on.",
         ("t1", "prefill-decode disaggregation")),
    Term("T2 (step-ahead speculation)", "While the PRM verifies a step, the draft already "
         "speculates the next one and the target prefetches its rewrite, so the devices "
         "overlap (flag `step_ahead`). The paper measures 1.25-1.33x (config1) and 1.35-1.40x "
         "(config2) over brsd on 3 GPUs.", ("t2", "step_ahead", "step-ahead speculation")),
    Term("PRM", "Process reward model: scores each reasoning step (Qwen2.5-Math-PRM-7B in the "
         "paper, served by vLLM as a pooling model without prefix caching, so each "
         "verification re-reads the whole context and costs more as the chain grows).",
         ("process reward model",)),
    Term("verifier", "What scores each draft step: a PRM on its own placement (RSD, "
         "HeteroReason), or the target judging the step with one 0-9 score token after its "
         "cached prefix (SpecReason; system key `verifier = \"target\"`), which shares the "
         "target's device. A step is accepted when its score reaches the accept threshold.",
         ("target judge", "target judges")),
    Term("workflow", "How a problem is written: `speculative` (a draft writes each step, a "
         "verifier scores it, the target rewrites rejected steps), `target-only` (the "
         "target model alone writes every step: the alternative every speculative answer is "
         "weighed against) or a width method (N samples of the target ranked by a PRM, "
         "voted, or searched step by step: best-of-n, weighted-best-of-n, majority, "
         "step-search, beam).", ("speculative", "width", "best-of-n", "majority")),
    Term("samples", "A width design's N (system key `samples`, 1-64): the samples of the "
         "target per problem, or the candidates per step of a step or beam search. They "
         "decode as one batch of N on the target's device (each sequence's KV cache at the "
         "maximum context must fit), and the PRM scores them as one batch.", ("N",)),
    Term("beam width", "Beam search's kept beams per step (system key `beam_width`, 1..N, "
         "dividing N): each kept beam expands N / beam_width candidates for the next step.",
         ("beam_width",)),
    Term("aggregation", "How a width design's PRM turns its step scores into a response's "
         "score (system key `aggregation`): the last step's, the lowest (min) or their "
         "product; absent, product for best-of-n and weighted best-of-n, last for the "
         "searches. It sets how well the PRM separates right from wrong responses.", ()),
    Term("target alone", "The target model writing every step on its own placement "
         "(`workflow = \"target-only\"`): no draft, verifier or thresholds; accept "
         "probability 0. What-if shows each speculative design beside the target alone of "
         "its target placement, with the margin.", ("target-only", "the target alone")),
    Term("colocation", "Roles that share one GPU (system key `colocate`: draft+target, "
         "prm+target, draft+prm, draft+prm+target): their models must fit its memory "
         "together, their work serialises, its idle power counts once and no link hop is "
         "paid between them. A schedule that overlaps two of them is not available: "
         "step-ahead needs every role apart, shadow sync the draft and the target, "
         "backtracking the draft and the verifier.", ("colocate", "placement",
                                                      "shared device")),
    Term("family", "The search's families of designs: target-only, gpu-speculative (a GPU "
         "draft), fpga-speculative (an FPGA draft) and width (N samples of the target ranked "
         "by a PRM or voted). A search reports its winner beside each family's best.",
         ("families",)),
    Term("margin", "One design's metric minus another's (accuracy in points): against the "
         "winner on the Design space page, against the target alone on What-if. It is "
         "decided when the joint 90% interval of the difference excludes 0.",
         ("margin vs the winner",)),
    Term("joint 90% interval", "The 90% interval of the difference between two designs "
         "(dse.uncertainty.joint): each uncertain factor moves both designs at once, so an "
         "error they share (the same model on the same board, the same workload statistics) "
         "cancels; narrower than the two intervals taken apart when they share hardware.",
         ("joint interval", "difference interval")),
    Term("draft", "The small model (Qwen2.5-0.5B-Instruct in the paper) that writes every step "
         "first: on an FPGA streaming decoder with weights and KV cache in HBM in "
         "heteroreason, on a GPU in the baselines.", ("draft model",)),
    Term("target", "The large model (Qwen2.5-Math-7B-Instruct in config1, Math-1.5B in "
         "config2) that rewrites rejected steps and writes backtracking alternatives; with "
         "prefix caching it prefills only the tokens committed since its last call.",
         ("target model",)),
    Term("critical path", "The chain of operations that sets a problem's latency when devices "
         "overlap; the latency breakdown splits it by role (draft, PRM, target, link) plus "
         "the one-off prompt prefill or KV migration."),
    Term("prefetch", "Under step-ahead, the target starts writing the next step from the "
         "previous commit before the verdict, so a rejected step's rewrite is partly done "
         "when the reject arrives.", ("target prefetch",)),
    Term("shadow sync", "After a reject, the draft absorbs the target's rewrite tokens as "
         "they stream (a forward pass without the LM head, hidden behind the target's own "
         "decoding) instead of re-prefilling them afterwards (flag `shadow_sync`).",
         ("shadow_sync", "shadow synchronisation", "shadow synchronization")),
    Term("speculation stall", "Under step-ahead, the draft finishing its speculation of the "
         "next step before the verdict and waiting. The paper's speculation stall ratio is "
         "the share of steps where this happens (4.95-26.57%, mean 17.5%); the report's "
         "`speculation_stall_ratio` is the same stall as a share of the latency.",
         ("speculation stall ratio", "speculation_stall_ratio")),
    Term("wasted tokens", "Draft tokens speculated step-ahead and discarded because the step "
         "under verification was rejected, per problem; their share of the energy is the "
         "wasted energy share (paper: 0.48-0.72% on 3 GPUs, config1).",
         ("wasted_tokens_per_problem", "wasted energy share")),
    Term("communication share", "The share of the latency spent on the links between "
         "devices (PCIe; token ids and verdicts, never KV caches); the paper measures at most "
         "0.0123%.",
         ("communication_share",)),
    Term("J/token", "Energy per committed token: every device's energy over the problem (idle "
         "power while it waits, plus dynamic power while busy) divided by the committed "
         "tokens. The paper's energy gains instead charge each device its operating power "
         "over the whole latency.", ("j_per_token", "energy per token")),
    Term("closed form", "The fast evaluator (dse.engine.closed_form.evaluate): expected values "
         "over quadrature grids of token counts and context, vectorised with numpy, 16-40 ms "
         "per design; a trace-driven simulator checks it to within 2%.",
         ("closed-form", "closed_form")),
    Term("mean-value model", "The same timing rules at the mean step and mean context, derived "
         "with sympy and compiled for arrays of designs: used to screen many designs (sweep, "
         "optimize) and for sensitivities; within about 15% of the closed form.",
         ("mean value model",)),
    Term("90% interval", "The range [low-high] in which the declared evidence (leave-one-out "
         "residuals, declared ranges in dse/data/uncertainty.toml) puts the true value with "
         "about 90% probability, each factor's 5th-95th percentile propagated to first "
         "order.", ("interval", "error bar")),
    Term("provenance", "What each component of a prediction rests on: calibrated (fitted to "
         "this setting), cross-validated (a family checked leave-one-out) or extrapolated "
         "(outside what the data cover), and on which data."),
    Term("calibrated vs predicted row", "Each Paper row's label says what the fits read: "
         "fitted (Table III rsd and brsd accuracy, fitted to), calibrated (a constraint built "
         "from it: the rejection rows cap the accuracy fit, the V80 rows against the strong "
         "baseline set a declared range), copied (a catalog value equals it) or predicted "
         "(made without it).", ("calibrated", "predicted", "fitted", "copied")),
    Term("tolerance", "How far a tool value may lie from the paper's value or range and still "
         "count as within: +-0.05 for ratios and shares, +-1.5 points for accuracy, at most "
         "0.05% for the communication share."),
    Term("roofline", "A pass's physical bound: the larger of bytes moved / memory bandwidth "
         "and operations / peak compute. Small models at batch 1 run far below it (GPU kernel "
         "launches, an FPGA decoder's achieved efficiency), so the tool adds calibrated "
         "overheads."),
    Term("serving profile", "The GPU software stack as data (boards/serving/: vLLM with CUDA "
         "graphs, eager vLLM, HF transformers, ...): its bandwidth and compute efficiencies, "
         "per-layer and per-step overheads and prefix caching, fitted to that stack's "
         "published measurements.", ("serving", "software")),
    Term("KV-cache precision", "The width of a GPU role's cached keys and values "
         "(`<role>_kv_precision`): 16 bits (the model dtype, the default), fp8 or int8 (8), "
         "q8_0 (8.5) or q4_0 (4.5, llama.cpp blocks). It scales the KV bytes each token reads "
         "and the KV memory at the maximum context; an FPGA build fixes its own.",
         ("kv_precision", "KV cache")),
    Term("weight offload", "The share of a GPU role's weights held in host memory and copied "
         "over its host link on every forward pass (`<role>_offload_fraction`, in [0, 1); "
         "vLLM --cpu-offload-gb): a model fits a smaller GPU, at the link's speed per token.",
         ("offload_fraction", "offload")),
    Term("host CPU slowdown", "A GPU's host CPU: its single-thread time relative to the hosts "
         "the serving profiles were fitted on (1), scaling kernel launches and per-step host "
         "work (`<role>_host_cpu_slowdown`; absent: the board's own, with its source).",
         ("host_cpu_slowdown", "host CPU")),
    Term("projection only", "A bundle part that cannot be built as exported: a board without "
         "a public Vitis platform (the V80) gets a build that stops at the .xo; the manifest "
         "says why.", ("projection_only",)),
)


def _norm(name: str) -> str:
    return " ".join(re.sub(r"[_\-]+", " ", name.lower()).split())


def _index(terms: tuple[Term, ...]) -> dict[str, Term]:
    out: dict[str, Term] = {}
    for t in terms:
        for key in (t.name, *t.aliases):
            k = _norm(key)
            if k in out and out[k] is not t:
                raise ValueError(f"glossary: {key!r} names both {out[k].name!r} and "
                                 f"{t.name!r}")
            out[k] = t
    return out


INDEX = _index(TERMS)


def term(name: str) -> Term:
    """The entry of a term, by its name or an alias (case, `_` and `-` ignored); a KeyError
    listing the terms for an unknown one."""
    t = INDEX.get(_norm(name))
    if t is None:
        raise KeyError(f"no glossary term {name!r}; terms: "
                       + ", ".join(x.name for x in TERMS))
    return t


def term_help(name: str) -> str:
    """A term's definition, for a widget's tooltip."""
    return term(name).definition


def search(query: str) -> list[Term]:
    """The terms whose name, an alias or the definition holds every word of query (case
    ignored); all terms for an empty query."""
    words = _norm(query).split()
    return [t for t in TERMS
            if all(w in _norm(" ".join((t.name, *t.aliases, t.definition))) for w in words)]
