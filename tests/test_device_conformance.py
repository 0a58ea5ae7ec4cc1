"""One conformance suite every registered device kind passes (dse.devices.protocol).

Parametrized over every kind in dse.devices.registry.KINDS and, per kind, every shipped board
of its catalog kind with a few models and precisions that fit: times non-decreasing in context
(and in tokens), never below the bandwidth floor (bytes / peak bandwidth) or the compute floor
(operations / peak operations), array calls equal to scalar calls, busy power >= idle power
> 0, and a fit check consistent with the bytes. The floors are computed here from dse.devices
.shape and the placement's declared peaks, not from the kind's own cost coefficients. A new
kind is picked up by registering it; per-kind tests with hand-computed numbers live in
test_gpu.py and test_fpga.py.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.core.roles import DEVICE_ROLES as ROLES
from dse.devices import shape
from dse.devices.protocol import POWER_STATES, Placement
from dse.devices.registry import (
    KINDS,
    DeviceRegistry,
    device_names,
    kind_of,
    place,
    resolve,
)
from dse.errors import SpecError, UnknownNameError
from dse.specs import Catalog

CAT = Catalog.load()
CONTEXT = 4096
# (model, which precisions): a small draft at every precision of the kind; a 7B target, a 7B
# PRM (classifier head) and a 72B target (tensor parallel on GPUs) at the kind's default; and
# the other shapes (GPT-2: learned positions, LayerNorm, plain MLP; OPT; Qwen3 q/k norms).
MODELS = (("qwen2.5-0.5b-instruct", "all"), ("qwen2.5-math-7b-instruct", "default"),
          ("qwen2.5-math-prm-7b", "default"), ("qwen2.5-math-72b-instruct", "default"),
          ("gpt2", "default"), ("opt-1.3b", "default"), ("qwen3-8b", "default"))
REL = 1e-9  # floors and the times are computed along different paths: rounding only


def _placements() -> list[object]:
    out: list[object] = []
    for kind in KINDS:
        for board in CAT.names(kind.catalog_kind):
            for model, which in MODELS:
                precs = kind.precisions if which == "all" else (kind.default_precision,)
                for prec in precs:
                    pl = place(CAT, CAT.model(model), board, precision_name=prec,
                               context_tokens=CONTEXT)
                    if not pl.infeasibility():
                        out.append(pytest.param(pl, id=f"{kind.name}-{board}-{model}-{prec}"))
            # every other software of the kind (FPGA engines: flightllm, hls-stream, ...) on
            # each board (GPU serving profiles: on the kind's first board), with the small draft
            # at the kind's default precision and at the lowest-bit one it runs: a new engine or
            # serving-profile file is picked up here
            low = min(kind.precisions, key=lambda p: shape.precision(p).weight_bits)
            first = board == CAT.names(kind.catalog_kind)[0]
            for sw in CAT.names(kind.software_kind):
                if sw == kind.default_software or not (kind.name == "fpga" or first):
                    continue
                for prec in dict.fromkeys((kind.default_precision, low)):
                    pl = place(CAT, CAT.model(MODELS[0][0]), board, precision_name=prec,
                               software=sw, context_tokens=CONTEXT)
                    if not pl.infeasibility():
                        out.append(pytest.param(
                            pl, id=f"{kind.name}-{board}-{MODELS[0][0]}-{prec}-{sw}"))
    return out


PLACEMENTS = _placements()
BOARDS = [pytest.param(k.name, b, id=f"{k.name}-{b}") for k in KINDS
          for b in CAT.names(k.catalog_kind)]

contexts = st.lists(st.integers(0, CONTEXT), min_size=1, max_size=6)
tokens = st.integers(1, 512)


def _weight_bytes(pl: Placement, *, head: bool = True) -> float:
    """Weights one forward pass must stream: layers, final norm and (optionally) the head."""
    m = pl.model
    params = shape.streamed_params_per_token(m) - (0 if head else shape.head_matmul_params(m))
    return params * pl.weight_bits / 8


def _kv_bytes(pl: Placement, tokens_: float) -> float:
    return shape.kv_bytes_per_token(pl.model, pl.kv_bits) * tokens_


def _floor_s(pl: Placement, bytes_: float, ops: float) -> float:
    return max(bytes_ / pl.peak_bytes_per_s, ops / pl.peak_ops_per_s)


@pytest.mark.parametrize("pl", PLACEMENTS)
class TestDeviceConformance:
    def test_kind_board_and_software(self, pl: Placement) -> None:
        kind = KINDS.get(pl.kind)
        assert CAT.get(kind.catalog_kind, pl.device.name) is pl.device
        assert kind_of(CAT, pl.device.name) is kind
        assert pl.precision.name in kind.precisions
        assert pl.serving in CAT.names(kind.software_kind)
        assert pl.tp >= 1 and pl.context_tokens == CONTEXT
        for v in (pl.peak_bytes_per_s, pl.peak_ops_per_s, pl.effective_bytes_per_s,
                  pl.effective_ops_per_s):
            assert math.isfinite(v) and v > 0
        assert pl.effective_bytes_per_s <= pl.peak_bytes_per_s * (1 + REL)
        assert pl.effective_ops_per_s <= pl.peak_ops_per_s * (1 + REL)
        assert (pl.clock_hz is not None) == ("clock_hz" in kind.build_knobs)

    @settings(max_examples=12, deadline=None)
    @given(ctx=contexts, n=tokens)
    def test_non_decreasing_in_context(self, pl: Placement, ctx: list[int], n: int) -> None:
        k = np.sort(np.array(ctx, dtype=float))
        for t in (pl.decode_token_s(k), pl.decode_s(n, k), pl.prefill_s(n, k),
                  pl.absorb_s(n, k)):
            assert np.all(np.isfinite(t)) and np.all(t > 0)
            assert np.all(np.diff(t) >= 0)

    @settings(max_examples=12, deadline=None)
    @given(ctx=st.integers(0, CONTEXT), ns=st.lists(tokens, min_size=1, max_size=6))
    def test_non_decreasing_in_tokens(self, pl: Placement, ctx: int, ns: list[int]) -> None:
        n = np.sort(np.array([0, *ns], dtype=float))
        for t in (pl.decode_s(n, ctx), pl.prefill_s(n, ctx), pl.absorb_s(n, ctx)):
            assert t[0] == 0.0  # nothing to do costs nothing
            assert np.all(np.diff(t) >= 0)

    @settings(max_examples=12, deadline=None)
    @given(ctx=st.integers(0, CONTEXT), n=tokens)
    def test_never_below_bandwidth_and_compute_floors(self, pl: Placement, ctx: int, n: int
                                                      ) -> None:
        m = pl.model
        token = _floor_s(pl, _weight_bytes(pl) + _kv_bytes(pl, ctx + 1),
                         float(shape.forward_flops(m, 1, ctx)))
        assert float(pl.decode_token_s(ctx)) >= token * (1 - REL)
        assert float(pl.decode_s(n, ctx)) >= n * token * (1 - REL)
        prefill = _floor_s(pl, _weight_bytes(pl) + _kv_bytes(pl, ctx),
                           float(shape.forward_flops(m, n, ctx)))
        assert float(pl.prefill_s(n, ctx)) >= prefill * (1 - REL)
        absorb_ops = 2 * (shape.linear_macs_per_token(m) * n
                          + float(shape.attention_macs(m, n, ctx)))
        absorb = _floor_s(pl, _weight_bytes(pl, head=False) + _kv_bytes(pl, ctx), absorb_ops)
        assert float(pl.absorb_s(n, ctx)) >= absorb * (1 - REL)
        roof, bound = pl.decode_bound(ctx)
        assert token * (1 - REL) <= roof <= float(pl.decode_token_s(ctx)) * (1 + REL)
        assert bound in ("memory", "compute", "overhead")
        assert pl.prefill_bound(n) in ("memory", "compute", "overhead")

    @settings(max_examples=8, deadline=None)
    @given(ctx=contexts, data=st.data())
    def test_vectorised_equals_scalar(self, pl: Placement, ctx: list[int], data: st.DataObject
                                      ) -> None:
        k = np.array(ctx, dtype=float)
        n = np.array(data.draw(st.lists(tokens, min_size=len(ctx), max_size=len(ctx))),
                     dtype=float)
        pairs = list(zip(n.tolist(), k.tolist(), strict=True))
        checks = [
            (pl.decode_token_s(k), [pl.decode_token_s(c) for _, c in pairs]),
            (pl.decode_s(n, k), [pl.decode_s(a, c) for a, c in pairs]),
            (pl.prefill_s(n, k), [pl.prefill_s(a, c) for a, c in pairs]),
            (pl.prefill_s(n, k, all_positions=True),
             [pl.prefill_s(a, c, all_positions=True) for a, c in pairs]),
            (pl.absorb_s(n, k), [pl.absorb_s(a, c) for a, c in pairs]),
            (pl.power_w("decode", k), [pl.power_w("decode", c) for _, c in pairs]),
            (pl.power_w("prefill", k, n), [pl.power_w("prefill", c, a) for a, c in pairs]),
        ]
        for vec, scalars in checks:
            assert vec.shape == k.shape
            np.testing.assert_allclose(vec, [float(s) for s in scalars], rtol=1e-12, atol=0)

    @settings(max_examples=8, deadline=None)
    @given(ctx=contexts, n=tokens)
    def test_busy_power_at_least_idle(self, pl: Placement, ctx: list[int], n: int) -> None:
        k = np.array(ctx, dtype=float)
        idle = float(pl.power_w("idle"))
        assert math.isfinite(idle) and idle > 0
        for state in POWER_STATES:
            p = pl.power_w(state, k, n)
            assert np.all(np.isfinite(p)) and np.all(p >= idle)

    def test_fit_consistent_with_bytes(self, pl: Placement) -> None:
        _assert_fit_consistent(pl)
        assert not pl.memory_infeasibility()

    @settings(max_examples=8, deadline=None)
    @given(ctx=st.integers(0, CONTEXT), n=tokens, b=st.integers(2, 256))
    def test_a_batch_shares_the_weights(self, pl: Placement, ctx: int, n: int, b: int) -> None:
        """Batch 1 is the single-stream call; a batch of b costs at least one sequence and at
        most b sequences one after another (the weights stream once for all), never below
        its own floors (every sequence's KV and operations), at no more energy per token."""
        m = pl.model
        one, many = float(pl.decode_token_s(ctx)), float(pl.decode_token_s(ctx, batch=b))
        assert float(pl.decode_token_s(ctx, batch=1)) == one
        assert one * (1 - REL) <= many <= b * one * (1 + REL)
        floor = _floor_s(pl, _weight_bytes(pl) + b * _kv_bytes(pl, ctx + 1),
                         b * float(shape.forward_flops(m, 1, ctx)))
        assert many >= floor * (1 - REL)
        assert float(pl.decode_s(n, ctx, batch=b)) >= float(pl.decode_s(n, ctx)) * (1 - REL)
        p1, pb = float(pl.prefill_s(n, ctx)), float(pl.prefill_s(n, ctx, batch=b))
        assert p1 * (1 - REL) <= pb <= b * p1 * (1 + REL)
        assert float(pl.prefill_s(n, ctx, batch=b)) >= _floor_s(
            pl, _weight_bytes(pl) + b * _kv_bytes(pl, ctx),
            b * float(shape.forward_flops(m, n, ctx))) * (1 - REL)
        # energy per generated token never rises with the batch (the weights' share falls)
        e1 = float(pl.power_w("decode", ctx)) * one
        eb = float(pl.power_w("decode", ctx, batch=b)) * many / b
        assert eb <= e1 * (1 + REL)
        assert float(pl.power_w("decode", ctx, batch=b)) >= float(pl.power_w("idle"))

    @settings(max_examples=8, deadline=None)
    @given(ctx=st.integers(0, CONTEXT), n=tokens, b=st.integers(1, 256))
    def test_an_iteration_is_its_parts_in_one_pass(self, pl: Placement, ctx: int, n: int,
                                                   b: int) -> None:
        """A serving iteration of decodes alone is a batched decode step, of a prefill chunk
        alone a prefill; both together cost at least either, and at most the decode step plus
        a prefill of all the pass's new tokens (the kernels a pass runs may follow its total
        rows: a stack that dequantises weights above 32 rows does so for the mixed pass even
        where neither part alone reaches 32); its power lies between idle and the busiest."""
        dec = float(pl.decode_token_s(ctx, batch=b))
        pre = float(pl.prefill_s(n, ctx))
        assert float(pl.iteration_s(b, ctx, 0)) == pytest.approx(dec, rel=1e-12)
        assert float(pl.iteration_s(0, 0, n, ctx)) == pytest.approx(pre, rel=1e-12)
        both = float(pl.iteration_s(b, ctx, n, ctx))
        assert max(dec, pre) * (1 - REL) <= both <= (dec + float(pl.prefill_s(n + b, ctx))) \
            * (1 + REL)
        p = float(pl.iteration_power_w(b, ctx, n, ctx))
        assert math.isfinite(p) and p >= float(pl.power_w("idle")) * (1 - REL)

    def test_max_batch_is_what_fits(self, pl: Placement) -> None:
        """max_batch sequences' KV at the deployment's context fit beside the weights, one
        more does not (or the cap is reached); 1 always fits a placement that fits."""
        from dse.devices.protocol import MAX_BATCH

        b = pl.max_batch()
        assert 1 <= b <= MAX_BATCH
        kv_one = pl.kv_bytes_per_token * pl.context_tokens / pl.tp
        weights = pl.memory_needed_bytes - kv_one
        assert weights + b * kv_one <= pl.usable_memory_bytes * (1 + REL)
        assert b == MAX_BATCH or weights + (b + 1) * kv_one > pl.usable_memory_bytes
        assert pl.max_batch(pl.context_tokens // 2) >= b


def _assert_fit_consistent(pl: Placement) -> None:
    need, usable = pl.memory_needed_bytes, pl.usable_memory_bytes
    expect = (pl.weights_bytes + pl.kv_bytes_per_token * pl.context_tokens) / pl.tp
    assert need == pytest.approx(expect, rel=1e-12)
    assert pl.weights_bytes == shape.total_params(pl.model) * pl.weight_bits / 8
    assert usable <= pl.memory_bytes
    mem = pl.memory_infeasibility()
    assert (need <= usable) == (not mem)
    why = pl.infeasibility()
    assert all(w in why for w in mem)
    res = pl.resources()
    assert res["memory_bytes"] == (need, usable)
    for name, (used, have) in res.items():
        assert math.isfinite(used) and used >= 0 and have > 0, name
        if used > have:
            assert why, f"{name} {used} > {have} but no reason given"


@pytest.mark.parametrize(("kind_name", "board"), BOARDS)
@settings(max_examples=20, deadline=None)
@given(model=st.sampled_from(CAT.names("model")), data=st.data(),
       ctx=st.integers(1, 200_000))
def test_fit_check_consistent_with_bytes(kind_name: str, board: str, model: str,
                                         data: st.DataObject, ctx: int) -> None:
    """Over every model, precision and context (fitting or not): needed <= usable exactly
    when no memory reason is given, and every resource over its availability gives one."""
    kind = KINDS.get(kind_name)
    prec = data.draw(st.sampled_from(kind.precisions))
    pl = place(CAT, CAT.model(model), board, precision_name=prec, context_tokens=ctx)
    _assert_fit_consistent(pl)
    if ctx > pl.model.max_position_embeddings:
        assert any("max positions" in w for w in pl.infeasibility())


# ------------------------------------------------------------------- the kinds and registry


@pytest.mark.parametrize("kind", list(KINDS), ids=KINDS.names())
def test_kind_capabilities(kind):
    """Every kind ships boards, runs its default precision and software, holds known roles,
    and its builder makes a placement of its kind with the defaults."""
    boards = CAT.names(kind.catalog_kind)
    assert boards, f"no shipped {kind.catalog_kind} boards"
    assert kind.default_precision in kind.precisions
    assert set(kind.precisions) <= set(shape.PRECISIONS)
    assert kind.default_software in CAT.names(kind.software_kind)
    assert kind.roles and set(kind.roles) <= set(ROLES)
    pl = place(CAT, CAT.model("qwen2.5-0.5b-instruct"), boards[0])
    assert pl.kind == kind.name and pl.serving == kind.default_software
    assert pl.precision.name == kind.default_precision
    r = kind.knob_ranges(pl.device)
    assert bool(r) == bool(kind.build_knobs)


def test_every_role_has_a_kind_and_names_resolve_once():
    for role in ROLES:
        assert KINDS.for_role(role)
    names = device_names(CAT)
    assert len(names) == len(set(names))  # a board name means one device
    for n in names:
        spec, kind = resolve(CAT, n)
        assert spec.name == n and CAT.get(kind.catalog_kind, n) is spec


def test_duplicate_kind_raises():
    gpu = KINDS.get("gpu")
    with pytest.raises(ValueError, match="already registered"):
        KINDS.register(gpu)
    fresh = DeviceRegistry()
    fresh.register(gpu)
    with pytest.raises(ValueError, match="catalog kind 'gpu' already maps to device kind"):
        fresh.register(replace(gpu, name="gpu2"))
    with pytest.raises(ValueError, match="default precision"):
        fresh.register(replace(gpu, name="npu", catalog_kind="npu", precisions=("w8a8",)))
    fresh.register(replace(gpu, name="npu", catalog_kind="npu", precisions=("w8a8",),
                           default_precision="w8a8"))
    assert fresh.names() == ["gpu", "npu"] and fresh.get("npu").catalog_kind == "npu"
    assert KINDS.names() == ["gpu", "fpga"]  # the fresh registry left the global one alone


def test_unknown_kind_and_device_list_the_valid_ones():
    with pytest.raises(UnknownNameError, match=r"unknown device kind 'asic'; valid: fpga, gpu"):
        KINDS.get("asic")
    with pytest.raises(UnknownNameError, match=r"unknown device 'u281'; valid: .*u280"):
        resolve(CAT, "u281")


def test_precision_checks():
    npu = replace(KINDS.get("gpu"), name="npu", label="NPU", article="an",
                  precisions=("w8a8",), default_precision="w8a8")
    npu.check_precision("w8a8")
    with pytest.raises(SpecError, match=r"'bf16' not supported on an NPU; valid: w8a8"):
        npu.check_precision("bf16")
    with pytest.raises(UnknownNameError, match="unknown precision 'fp4'"):
        npu.check_precision("fp4")


def test_place_rejects_knobs_the_kind_lacks():
    with pytest.raises(ValueError, match="no build knobs clock_hz"):
        place(CAT, CAT.model("qwen2.5-0.5b-instruct"), "rtx-3090", knobs={"clock_hz": 3e8})
    pl = place(CAT, CAT.model("qwen2.5-0.5b-instruct"), "u280", knobs={"clock_hz": 2e8})
    assert pl.clock_hz == 2e8
