"""`gpu/vllm_*.yaml`: `vllm serve --config FILE` files for vLLM 0.9.2 (the paper's version).

Every key is a long option of `vllm serve` 0.9.2 without its dashes
(shared/reference/vllm-0.9.2-serve-flags.txt). vLLM turns `key: true` into `--key` and silently
drops `key: false`, so a flag the design turns off is written in its `no-` form
(`no-enable-prefix-caching: true`); see build-and-host-formats.md 4.1.

What each file states, from the design:
- dtype from the placement's precision (bf16 -> bfloat16, fp16 -> float16; quantised weights
  need a quantised checkpoint, from whose config vLLM reads the method);
- max-model-len = the design's context budget; tensor-parallel-size = the placement's tp;
- gpu-memory-utilization and enforce-eager from the serving profile (boards/serving); a
  server sharing its GPU gets its part of the static split instead (memory_splits);
- prefix caching as the cost model assumes it: on for generators under a profile with prefix
  caching; off for the PRM, which re-reads the whole context at every verification
  (DESIGN.md section 4): vLLM 0.9.2 serves a PRM with a reward head as a pooling model
  (`task: reward`, STEP pooling), and one that scores with its LM head (`lm-prm`,
  `implicit-prm`) as a plain LM whose prompt logprobs give the score;
- ports: RSD's (draft 12340, target 12341, PRM 12342); seed 0.

A target verifier (SpecReason) has no server of its own: the target judges, so there is no
vllm_prm.yaml and the target's prefix caching is on (a judge call prefills only the new step,
as dse.model.verifiers costs it). Roles that share one GPU (design.colocated) get one
CUDA_VISIBLE_DEVICES and a static split of its memory, as SpecReason launches its two models
on the same GPUs (`--gpu-memory-utilization` 0.8 and 0.1; build-and-host-formats.md 4.3);
see memory_splits.

A design chosen at a load (its design file's [serving] table, ctx.serving) is served as the
search served it: each server's scheduler caps (`max-num-seqs`; the target's
`max-num-batched-tokens` and `enable-chunked-prefill` where the one-model engine priced them),
a target-only design's token-level proposer as vLLM 0.9.2's `speculative-config` JSON (its
`--speculative-model`/`--num-speculative-tokens` flags are gone; serving_options), and one set
of servers per replica, started by gpu/replicas.sh (dse.exporters.replicas).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from dse.core.roles import Role
from dse.devices.protocol import Placement
from dse.errors import SpecError
from dse.exporters.exporter import ExportContext, ExportFile, Rendered, gpu_roles, served_roles
from dse.io.design_files import ServingSettings
from dse.model.design import Design
from dse.specs import Catalog, ModelSpec
from dse.specs.emit import yaml_text

HOST = "127.0.0.1"
PORTS = {"draft": 12340, "target": 12341, "prm": 12342}  # RSD's scripts/*.sh
SEED = 0
_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "int8": "bfloat16", "fp8": "bfloat16"}
PURPOSE = {
    Role.DRAFT: "vllm serve --config for the draft (vLLM 0.9.2)",
    Role.VERIFIER: "vllm serve --config for the PRM, a reward (pooling) model (vLLM 0.9.2)",
    Role.TARGET: "vllm serve --config for the target (vLLM 0.9.2)",
}
BYTES_PER_GIB = 2**30  # --cpu-offload-gb counts GiB
SHARE_DECIMALS = 4  # a colocated role's gpu-memory-utilization, rounded down to these


def render(ctx: ExportContext) -> Rendered:
    """The exporter "vllm": gpu/vllm_<role>.yaml for every role placed on GPUs."""
    design = ctx.design
    notes: list[str] = []
    if Role.DRAFT in gpu_roles(design):
        notes.append(f"the draft runs on a GPU ({design.draft.device.name}): "
                     "gpu/vllm_draft.yaml instead of FPGA build files")
    if design.is_speculative and design.verifier.is_target:
        notes += design.verifier.serving_notes()
    splits = memory_splits(ctx.cat, design)
    notes += [split_note(design, sp) for sp in splits]
    files = []
    for role, gpus in gpu_indices(design).items():
        text, role_notes = vllm_yaml(ctx.cat, design, role.value, gpus, ctx.version, splits,
                                     ctx.serving)
        files.append(ExportFile(f"gpu/vllm_{role.value}.yaml", text, PURPOSE[role]))
        notes += role_notes
    if ctx.serving is not None:
        from dse.exporters import replicas

        more, more_notes = replicas.render(ctx, gpu_indices(design), PORTS)
        files += more
        notes += more_notes
    return Rendered(files=tuple(files), notes=tuple(notes))


def gpu_indices(design: Design) -> dict[Role, str]:
    """CUDA_VISIBLE_DEVICES per server: one GPU (tp GPUs) per model, as in the paper, except
    that the servers of a colocated group share their group's GPUs."""
    roles = gpu_roles(design)
    out: dict[Role, str] = {}
    first: dict[tuple[str, ...], int] = {}  # a group's first GPU
    i = 0
    for r in roles:
        group = next((g for g in design.colocated if r.value in g), (r.value,))
        if group not in first:
            first[group] = i
            i += max(getattr(design, o.value).tp for o in roles if o.value in group)
        k = first[group]
        out[r] = ",".join(str(j) for j in range(k, k + getattr(design, r.value).tp))
    return out


@dataclass(frozen=True)
class MemorySplit:
    """The static memory split of one GPU shared by several servers (SpecReason's launch).

    Each server's `gpu-memory-utilization` (vLLM 0.9.2: the fraction of the GPU's memory that
    instance may use, its weights, activations and KV cache) is its share
        need_bytes / memory_bytes + (cap - sum(need_bytes) / memory_bytes) / n,
    rounded down to SHARE_DECIMALS decimals: what its placement needs (memory_needed_bytes:
    weights + KV at the design's max context), plus an equal part of the headroom the model
    keeps under the serving profile's memory_utilization `cap` for activations and CUDA graphs
    (the runtime reserve; dse.model.design.infeasibility checks the needs fit beside it), since vLLM
    profiles an instance's activations inside its own fraction. The shares sum to at most
    `cap`, as SpecReason's 0.8 + 0.1 sum to vLLM's default 0.9."""

    roles: tuple[Role, ...]  # servers on the GPU, in role order
    device: str
    memory_bytes: float  # per GPU (datasheet)
    cap: float  # the lowest memory_utilization of the servers' profiles
    need_bytes: dict[Role, float]
    shares: dict[Role, float]


def memory_splits(cat: Catalog, design: Design) -> list[MemorySplit]:
    """The memory split of each colocated group with more than one server on GPUs (a target
    verifier alone with its target is one server: no split)."""
    served = served_roles(design)
    gpu = gpu_roles(design)
    out = []
    for group in design.colocated:
        roles = tuple(r for r in gpu if r.value in group)
        if len(roles) < 2:
            continue
        need = {r: served[r].memory_needed_bytes for r in roles}
        mem = served[roles[0]].memory_bytes
        cap = min(cat.serving(served[r].serving).memory_utilization for r in roles)
        extra = (cap - sum(need.values()) / mem) / len(roles)
        scale = 10**SHARE_DECIMALS
        shares = {r: math.floor((need[r] / mem + extra) * scale) / scale for r in roles}
        out.append(MemorySplit(roles, served[roles[0]].device.name, mem, cap, need, shares))
    return out


def split_note(design: Design, sp: MemorySplit) -> str:
    """The manifest's note on a shared GPU: who shares it and the static split."""
    names = [r.value for r in sp.roles]
    ids = gpu_indices(design)
    shared = sorted(set.intersection(*(set(ids[r].split(",")) for r in sp.roles)), key=int)
    return (f"{' and '.join(names)} share {sp.device} (GPU {','.join(shared)}): static KV "
            "split, " + " / ".join(f"{r.value} {sp.shares[r]:g}" for r in sp.roles)
            + f" of {sp.memory_bytes / 1e9:g} GB (gpu-memory-utilization: weights + KV at "
            f"{design.max_context_tokens} tokens, "
            + ", ".join(f"{r.value} {sp.need_bytes[r] / 1e9:.2f} GB" for r in sp.roles)
            + f", plus an equal part of the headroom under {sp.cap:g})")


# PRM heads vLLM 0.9.2 serves as a pooling model (`task: reward`); the other PRM heads score
# with the LM head (dse.specs.model.LM_HEADS) and run as a plain LM server
POOLING_HEADS = ("prm-classifier", "orm-scalar", "value")


def pooled(role: str, head: str | None = None) -> bool:
    """The role's server is a pooling model: a PRM whose head is a reward head (head None: a
    PRM of the paper's kind, prm-classifier)."""
    return role == "prm" and (head is None or head in POOLING_HEADS)


def endpoint(role: str, head: str | None = None) -> str:
    """The URL the host scheduler calls: completions for generators and for a PRM that scores
    with its LM head, /pooling for a PRM with a reward head."""
    base = f"http://{HOST}:{PORTS[role]}"
    return base + ("/pooling" if pooled(role, head) else "/v1")


def prm_head_note(cat: Catalog, model: ModelSpec) -> str | None:
    """What serving the PRM's head with vLLM 0.9.2 takes beyond this file, or None (a
    Qwen2.5-Math-PRM classifier head, served natively)."""
    head, hf = model.head, model.hf_id
    if head == "value":
        return (f"gpu/vllm_prm.yaml: {hf} has a value head (Linear(h, 1)) that vLLM 0.9.2 "
                "does not serve natively (RSD uses the Skywork PRM vLLM plugin)")
    if head == "orm-scalar":
        return (f"gpu/vllm_prm.yaml: {hf} is an outcome reward model (Qwen2ForRewardModel, "
                "served natively as a pooling model): it scores the response so far, one "
                "value per token; the step's score is the last token's")
    if head == "lm-prm":
        return (f"gpu/vllm_prm.yaml: {hf} scores with its LM head, so it runs as a plain LM "
                "server (no task: reward) on /v1: ask /v1/completions with prompt_logprobs "
                "and take the two label tokens' probabilities at each step tag (Math-Shepherd "
                "'+'/'-'); vLLM computes the full-vocabulary logits there, as the design counts")
    if head == "implicit-prm":
        ref = cat.model(model.reference_model) if model.reference_model else None
        ref_hf = ref.hf_id if ref is not None else "its reference model"
        return (f"gpu/vllm_prm.yaml: {hf} is an implicit PRM: a step's reward is the summed "
                f"log-likelihood ratio of its tokens under {hf} and the reference {ref_hf}, "
                "so both run as plain LM servers (no task: reward) returning prompt_logprobs "
                f"on /v1; this export writes no server for {ref_hf}: serve it like this file "
                "(another port) on the same GPU(s), each server taking half of this file's "
                "gpu-memory-utilization (the design counts both models' weights and KV on the "
                "PRM's placement)")
    return None


def serve_options(cat: Catalog, design: Design, role: str,
                  splits: list[MemorySplit] | None = None,
                  serving: ServingSettings | None = None
                  ) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """(options, comments per key, notes for the manifest) of one role's server; `splits`
    (memory_splits) sets the gpu-memory-utilization of a role that shares its GPU; `serving`
    (a design chosen at a load) its caps and token-level proposer (_load_options)."""
    p: Placement = getattr(design, role)
    split = next((sp for sp in splits or () if role in sp.roles), None)
    prof = cat.serving(p.serving)
    notes: list[str] = []
    comments: dict[str, str] = {}
    opts: dict[str, Any] = {"model": p.model.hf_id, "served-model-name": role}
    if pooled(role, p.model.head):
        opts["task"] = "reward"
        comments["task"] = "pooling model; vLLM 0.9.2 serves it on POST /pooling"
    opts.update({"host": HOST, "port": PORTS[role], "seed": SEED,
                 "dtype": _DTYPE[p.precision.compute],
                 "max-model-len": design.max_context_tokens,
                 "tensor-parallel-size": p.tp,
                 "gpu-memory-utilization": prof.memory_utilization})
    if split is not None:
        r = Role(role)
        others = " and ".join(o.value for o in split.roles if o != r)
        opts["gpu-memory-utilization"] = split.shares[r]
        comments["gpu-memory-utilization"] = (
            f"static split of {split.device} with the {others}: weights + KV "
            f"{split.need_bytes[r] / 1e9:.2f} GB of {split.memory_bytes / 1e9:g} GB, plus an "
            f"equal part of the headroom under {split.cap:g}")
    _memory_options(design, role, p, opts, comments, notes)
    if p.precision.weight_bits < 16:
        comments["model"] = (f"{p.precision.name}: point this at a {p.precision.name} "
                             "checkpoint; vLLM reads the quantisation method from its config")
        notes.append(f"gpu/vllm_{role}.yaml: {p.precision.name} weights need a quantised "
                     f"checkpoint of {p.model.hf_id}")
    judge = role == "target" and design.is_speculative and design.verifier.is_target
    caching = (p.prefix_caching or judge) and role != "prm"
    key = "enable-prefix-caching" if caching else "no-enable-prefix-caching"
    opts[key] = True
    comments[key] = ("the target also judges each step: a judge call prefills only the new "
                     "step (SpecReason)" if judge else
                     "the design prefills only tokens the server has not seen" if caching
                     else "the design assumes every call re-reads the whole context")
    if design.is_width:
        # the N samples (a search's N candidates) of a problem run as one batch (the PRM
        # scores N candidates in one); vLLM's cap must hold them, and the design's memory
        # check holds N sequences' KV at max-model-len (dse.model.design.batch_misfits)
        opts["max-num-seqs"] = max(design.samples, 1)
        comments["max-num-seqs"] = (f"the {design.width_label} design runs its "
                                    f"{design.samples} sequences as one batch")
    if serving is not None:
        _load_options(cat, design, role, p, serving, opts, comments, notes)
    if not prof.cuda_graphs:
        opts["enforce-eager"] = True
        comments["enforce-eager"] = f"serving profile {prof.name}: no CUDA graphs"
    if not p.serving.startswith("vllm"):
        notes.append(f"gpu/vllm_{role}.yaml: the design's {role} serving profile {p.serving} "
                     "is not vLLM; this file serves it with vLLM in eager mode instead")
    note = prm_head_note(cat, p.model) if role == "prm" else None
    if note is not None:
        notes.append(note)
    return opts, comments, notes


def _memory_options(design: Design, role: str, p: Placement, opts: dict[str, Any],
                    comments: dict[str, str], notes: list[str]) -> None:
    """The role's KV-cache precision and weight offload as the cost model counts them: an FP8
    cache is `kv-cache-dtype: fp8`; int8 and llama.cpp's q8_0/q4_0 caches have no vLLM 0.9.2
    form (its choices: auto, fp8, fp8_e4m3, fp8_e5m2), so the file keeps the model dtype and the
    manifest says so. Offloaded weights are `cpu-offload-gb`, the offloaded share of the
    streamed weights per GPU in GiB, rounded up to 0.1 GiB (vLLM's --cpu-offload-gb: "The space
    in GiB to offload to CPU, per GPU", vllm/engine/arg_utils.py), so vLLM offloads at least
    what the design counts."""
    kv = getattr(design.system, f"{role}_kv_precision", None)
    if kv == "fp8":
        opts["kv-cache-dtype"] = "fp8"
        comments["kv-cache-dtype"] = f"{role}_kv_precision = fp8: an 8-bit KV cache"
    elif kv not in (None, "16"):
        notes.append(f"gpu/vllm_{role}.yaml: {role}_kv_precision = {kv} has no vLLM 0.9.2 "
                     "--kv-cache-dtype (auto, fp8, fp8_e4m3, fp8_e5m2); the file keeps a "
                     "16-bit cache, which needs more memory than the design counts")
    frac = getattr(p, "offload_fraction", 0.0)
    if frac > 0:
        host_bytes = float(getattr(getattr(p, "cost", None), "host_weight_bytes", 0.0)) / p.tp
        opts["cpu-offload-gb"] = math.ceil(host_bytes / BYTES_PER_GIB * 10) / 10
        comments["cpu-offload-gb"] = (f"{role}_offload_fraction = {frac:g}: that share of the "
                                      "streamed weights stays in host memory, GiB per GPU")


def _load_options(cat: Catalog, design: Design, role: str, p: Placement,
                  serving: ServingSettings, opts: dict[str, Any], comments: dict[str, str],
                  notes: list[str]) -> None:
    """A design at a load, as the search served it (dse.search.served_design):
    - max-num-seqs on every server: the [serving] table's cap, else vLLM's default for the GPU
      (dse.serving.load.vllm_caps: the design's servers each ran it); a width design's cap
      holds its N samples at least;
    - the target of a target-only design (the one-model engine): max-num-batched-tokens and
      enable-chunked-prefill as the table states them (the engine prices prompt chunks);
    - its token-level proposer: vLLM 0.9.2's speculative-config, a JSON object of its
      SpeculativeConfig fields `method` (ngram, eagle; a draft model's is inferred from it),
      `model` and `num_speculative_tokens`."""
    from dse.serving.load import vllm_caps

    caps = vllm_caps(p.memory_bytes, p.device.name, max_num_seqs=serving.max_num_seqs,
                     max_num_batched_tokens=serving.max_num_batched_tokens)
    seqs = max(caps.max_num_seqs, design.samples if design.is_width else 1)
    opts["max-num-seqs"] = seqs
    comments["max-num-seqs"] = (
        f"the scheduler's cap at {serving.rate:g} requests/s" + (
            "" if serving.max_num_seqs is not None
            else f" (vLLM's default on the {p.device.name}, as the serving model took it)"))
    one_model = role == "target" and design.workflow == "target-only"
    if one_model and serving.max_num_batched_tokens is not None:
        opts["max-num-batched-tokens"] = serving.max_num_batched_tokens
        comments["max-num-batched-tokens"] = "new tokens an iteration, as the model priced"
    if one_model and serving.enable_chunked_prefill is not None:
        key = ("enable-chunked-prefill" if serving.enable_chunked_prefill
               else "no-enable-chunked-prefill")
        opts[key] = True
        comments[key] = ("prompts in chunks beside the decodes, as the model priced them"
                         if serving.enable_chunked_prefill else "whole prompts, as priced")
    if serving.speculative_proposer is None or role != "target":
        return
    if not one_model:
        raise SpecError("[serving]", "speculative_proposer",
                        f"token-level speculation serves a target-only design, not a "
                        f"{design.family} design")
    name, k = serving.speculative_proposer, serving.num_speculative_tokens
    spec: dict[str, Any]
    if name == "ngram":
        spec = {"method": "ngram", "num_speculative_tokens": k}
    elif name == "eagle":
        head = f"EAGLE-head-for-{p.model.hf_id}"
        spec = {"method": "eagle", "model": head, "num_speculative_tokens": k}
        notes.append(f"gpu/vllm_target.yaml: speculative-config's model {head} is a "
                     f"placeholder: point it at an EAGLE head trained for {p.model.hf_id} "
                     "(the design priced a one-layer head of the target's shape)")
    else:
        draft = cat.model(name)
        spec = {"model": draft.hf_id, "num_speculative_tokens": k}
        notes.append(f"gpu/vllm_target.yaml: vLLM 0.9.2's V1 engine proposes with ngram and "
                     f"EAGLE; a draft model ({draft.hf_id}) falls back to its V0 engine, "
                     "while the design priced the draft's passes inside one V1 step")
    opts["speculative-config"] = json.dumps(spec, sort_keys=True)
    acc = serving.speculative_acceptance_rate
    comments["speculative-config"] = (
        f"{name} proposes {k} tokens a pass" + (
            "" if acc is None else f"; the design assumed acceptance {acc:g} a token"))


def vllm_yaml(cat: Catalog, design: Design, role: str, gpus: str, version: str,
              splits: list[MemorySplit] | None = None,
              serving: ServingSettings | None = None) -> tuple[str, list[str]]:
    opts, comments, notes = serve_options(cat, design, role, splits, serving)
    p: Placement = getattr(design, role)
    header = "\n".join([
        f"vllm_{role}.yaml: generated by hetero-dse {version} for design {design.name}.",
        f"The {role} ({p.model.name}) on {p.device.name}; vLLM 0.9.2:",
        f"  CUDA_VISIBLE_DEVICES={gpus} vllm serve --config gpu/vllm_{role}.yaml",
        *([] if serving is None else [
            f"(replica 0 of {serving.replicas}: gpu/replicas.sh starts every replica)"]),
    ])
    return yaml_text(opts, header, comments), notes
