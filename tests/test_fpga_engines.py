"""Per-design FPGA engines: loading, the physical fields that distinguish a design (hand-computed),
the per-design fit and its leave-one-out cross-validation (dse/validation/fpga.py)."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dse.devices import fpga, shape
from dse.specs import Catalog
from dse.validation import fpga as v

ROOT = Path(__file__).resolve().parents[1]
@pytest.fixture(scope="module")
def wide():
    return Catalog.load()


NEW_BOARDS = ("vcu128", "vhk158", "u50lv", "zcu102", "zcu106", "kv260", "vu9p")


def test_boards_load_with_key_numbers(cat):
    """Spot checks against the datasheet figures each file cites."""
    assert set(NEW_BOARDS) <= set(cat.names("fpga"))
    vcu = cat.fpga("vcu128")
    assert (vcu.dsp, vcu.lut, vcu.uram, vcu.hbm_bytes_per_s) == (9024, 1303680, 960, 460e9)
    vh = cat.fpga("vhk158")
    assert (vh.dsp, vh.dsp_kind, vh.hbm_bytes, vh.hbm_bytes_per_s) == (10848, "dsp58", 32e9,
                                                                        819.2e9)
    z = cat.fpga("zcu102")  # streams from the PS DDR4 (4 GB, 64-bit)
    assert not z.uses_hbm and z.weight_memory_bytes == 4e9 and z.uram == 0
    assert cat.fpga("kv260").ddr_bytes_per_s == 19.2e9
    f1 = cat.fpga("vu9p")
    assert (f1.ddr_channels, f1.ddr_bytes, f1.dsp) == (4, 64e9, 6840)


def test_engines_load_and_flexllm_unchanged(cat):
    """FlexLLM names none of the new fields: its builds are exactly today's."""
    assert {"flexllm", "flightllm", "streamtensor", "dfx", "membw-edge", "hls-stream"} <= set(
        cat.names("fpga-engine"))
    fx = cat.engine("flexllm")
    assert (fx.weight_bits_per_param, fx.attention_density, fx.mac_lanes, fx.clock_hz) == (
        None, None, None, None)
    b = fpga.default_build(cat.fpga("u280"), fx)
    assert (b.clock_hz, b.mac_lanes) == (300e6, fpga.DEFAULT_MAC_LANES)
    fl = fpga.default_build(cat.fpga("u280"), cat.engine("flightllm"))
    assert (fl.clock_hz, fl.mac_lanes) == (225e6, 4096)
    assert fpga.streamed_weight_bits(fl) == 3.5


def test_flightllm_style_decode_by_hand(wide):
    """LLaMA2-7B on a U280, 3.5 weight bits / parameter, attention density 0.5, 4096 lanes,
    225 MHz, KV 8 bit, context 1023 (1024 keys):
      body params = 32 x 202,383,360 + 4,096 = 6,476,271,616; head = 32,000 x 4,096 = 131,072,000
      weight bytes = (6,476,271,616 + 131,072,000) x 3.5 / 8 = 2,890,712,832
      KV bytes/token = 2 x 32 layers x 32 heads x 128 x 1 B = 262,144, x 0.5 density x 1024 keys
                     = 134,217,728
      bandwidth = min(425 GB/s, 32 x 14.375 x 0.924, 32 ports x 32 B x 225 MHz = 230.4 GB/s)
      t_mem = 3,024,930,560 / 230.4e9 = 13.129 ms
      MACs = 32 x (202,383,360 - 2 x 4,096) + 131,072,000 + 2 x 32 x 32 x 128 x 0.5 x 1024
           = 6,607,069,184 + 134,217,728; t_mac = / (4096 x 225e6) = 7.315 ms  -> memory-bound
      t = 13.129 ms / eta + (32 x 500 + 500) / 225e6."""
    m = wide.model("llama-2-7b")
    e = replace(wide.engine("flightllm"), attention_density=0.5, achieved_efficiency=0.7)
    c = fpga.fpga_cost(m, fpga.default_build(wide.fpga("u280"), e))
    assert shape.layer_params(m) == 202_383_360
    t_mem = (2_890_712_832 + 134_217_728) / 230.4e9
    t_mac = (6_607_069_184 + 134_217_728) / (4096 * 225e6)
    assert t_mem > t_mac
    expect = t_mem / 0.7 + (32 * 500 + 500) / 225e6
    assert float(fpga.decode_token_s(c, 1023)) == pytest.approx(expect, rel=1e-12)
    dense = fpga.fpga_cost(m, fpga.default_build(wide.fpga("u280"), replace(e,
                                                 attention_density=None)))
    assert float(dense.kv_bytes_per_token) == 2 * float(c.kv_bytes_per_token)


def test_effective_bits_set_memory_need(wide):
    m = wide.model("llama-2-7b")
    b = fpga.default_build(wide.fpga("u280"), wide.engine("flightllm"), max_seq_len=2048)
    weights = shape.total_params(m) * 3.5 / 8
    assert fpga.memory_needed_bytes(m, b) == pytest.approx(
        weights + shape.kv_bytes_per_token(m, 8) * 2048)


def test_no_uram_board_puts_buffers_in_bram(cat):
    b = fpga.default_build(cat.fpga("zcu102"), cat.engine("membw-edge"))
    use = fpga.resources(b)
    assert "uram" not in use
    assert use["bram36"] == 48 * 1 + 8 * 32  # one DDR channel's buffers + 32 URAM as 8 BRAM36


# ------------------------------------------------------------------ leave-one-out


def test_leave_one_out_known_answer():
    """Fit = mean of the others, data 1, 2, 3, 6: held-out predictions 11/3, 10/3, 3, 2;
    relative errors +266.7%, +66.7%, 0%, -66.7%; median |err| = (0.667 + 0.667) / 2, worst 2.667."""
    pts = [1.0, 2.0, 3.0, 6.0]
    res = v.leave_one_out(pts, fit=lambda sub: sum(sub) / len(sub),
                          predict_one=lambda mean, _p: mean, measured=lambda p: p,
                          name=lambda p: f"p{p:g}")
    assert [r.predicted for r in res] == pytest.approx([11 / 3, 10 / 3, 3.0, 2.0])
    row = v.cv_row("toy", res, len(pts))
    assert row.n == 4
    assert row.median_abs_rel_error == pytest.approx(2 / 3)
    assert row.worst_abs_rel_error == pytest.approx(8 / 3)
    with pytest.raises(ValueError):
        v.leave_one_out(pts[:1], fit=sum, predict_one=lambda a, b: 0.0, measured=float,
                        name=str)


def test_single_point_design_says_so():
    row = v.cv_row("dfx", [], 1)
    assert row.median_abs_rel_error is None and "rests on one measurement, no CV" in row.note


def test_fit_recovers_a_known_efficiency(wide):
    """Points generated by the model at eta = 0.4 are fitted back to 0.4, LOO errors ~0."""
    e = replace(wide.engine("streamtensor"), achieved_efficiency=0.4)
    pts = [v.FpgaPoint(f"t{x}", "streamtensor", "fpga_decode", "u55c", "gpt2-medium", "w8a8",
                       float(x), 0.0, "tokens/s", False) for x in (48, 96, 192, 384)]
    pts = [replace(p, value=v.predict(wide, p, e)) for p in pts]
    assert v.fit_efficiency(wide, pts, wide.engine("streamtensor")) == pytest.approx(0.4,
                                                                                     rel=1e-6)
    row, _res = v.engine_cv(wide, pts, wide.engine("streamtensor"))
    assert row.n == 4 and row.worst_abs_rel_error < 1e-6


def test_shipped_fits_are_current(wide):
    """The engines' fitted keys are what dse.validation.fpga gives on published_fpga.toml."""
    data = v.load()
    pts = v.points(data)
    for name in ("flightllm", "streamtensor", "dfx", "membw-edge", "hls-stream"):
        r = v.engine_report(wide, pts, name)
        for key, val in r.fitted.items():
            assert getattr(wide.engine(name), key) == pytest.approx(val, rel=1e-5), (name, key)


def test_data_file_well_formed():
    data = tomllib.loads((ROOT / "dse" / "data" / "published_fpga.toml").read_text())
    rows = data["measurement"]
    assert len(rows) >= 12 and len({r["framework"] for r in rows}) >= 3
    names = {p.stem for p in (ROOT / "boards" / "engines").glob("*.toml")}
    boards = {p.stem for p in (ROOT / "boards" / "fpgas").glob("*.toml")}
    for r in rows:
        assert r["kind"] in ("fpga_decode", "fpga_prefill", "power")
        assert r["source"] and r["setting"] and r["batch"] == 1
        assert r.get("catalog_engine", "flexllm") in names
        assert r.get("catalog_device", "u280") in boards
        assert all(len(p) == 2 and p[1] > 0 for p in r["points"])


def test_prefill_runs_at_its_own_efficiency(cat):
    """prefill_efficiency scales the prefill bound only: doubling it halves the bound part of a
    prefill (the pipeline fills stay) and leaves decode unchanged."""
    from dse.devices import fpga as f

    eng = cat.engine("streamtensor")
    model = cat.model("gpt2-medium")
    lo = f.fpga_cost(model, f.default_build(cat.fpga("u55c"), replace(eng, prefill_efficiency=0.2),
                                            weight_bits=4, activation_bits=8))
    hi = f.fpga_cost(model, f.default_build(cat.fpga("u55c"), replace(eng, prefill_efficiency=0.4),
                                            weight_bits=4, activation_bits=8))
    n = 256
    fills = float(np.ceil(n / lo.prefill_token_parallel) * lo.layer_fill_s + lo.head_fill_s)
    assert float(f.prefill_s(lo, n)) - fills == pytest.approx(
        2 * (float(f.prefill_s(hi, n)) - fills), rel=1e-12)
    assert float(f.decode_token_s(lo, 100)) == float(f.decode_token_s(hi, 100))
    absent = f.fpga_cost(model, f.default_build(cat.fpga("u55c"), replace(
        eng, prefill_efficiency=None), weight_bits=4, activation_bits=8))
    assert float(absent.prefill_efficiency) == eng.achieved_efficiency


def test_streamtensor_prefill_is_cross_validated(cat):
    """Its four measured TTFTs: leave-one-out within 10% each (the fitted value is current)."""
    data = v.load()
    r = v.engine_report(cat, v.points(data), "streamtensor")
    assert r.prefill_cv.n == 4
    assert r.prefill_cv.median_abs_rel_error is not None
    assert max(abs(x.rel_error) for x in r.prefill_loo) < 0.10
    assert r.fitted["prefill_efficiency"] == pytest.approx(
        cat.engine("streamtensor").prefill_efficiency, rel=1e-5)


# ------------------------------------------------------------------ HLS engine, sub-4-bit


def test_hls_stream_decode_by_hand(wide):
    """stories15M (6 layers, dim 288, FFN 768, 6 heads x 48, vocab 32,000, tied head) at fp32 on
    a ZCU106, the ZCU106 port's own build (published_fpga.toml: 1 FP32 MAC and one 32-bit word
    per cycle, one channel, 150 MHz, FP32 KV), ctx 112:
      layer params = 4 x 288^2 + 3 x 288 x 768 + 2 x 288 = 995,904; body = 6 x 995,904 + 288
                   = 5,975,712; head = 32,000 x 288 = 9,216,000
      weight bytes = (5,975,712 + 9,216,000) x 4 = 60,766,848; KV = 2 x 6 x 6 x 48 x 4 B = 13,824
                   a token, x 113 keys = 1,562,112
      bandwidth = min(19.2 GB/s x 0.923913, 1 channel x 4 B x 150 MHz) = 0.6 GB/s: the port
      t_mem = 62,328,960 / 0.6e9 = 103.9 ms; t_mac = (6 x 995,328 + 9,216,000 + 2 x 6 x 6 x 48 x
              113) / (1 x 150e6) = 102.4 ms -> memory-bound (one word, one MAC a cycle)
      t = t_mem / eta + (6 x 500 + 500) / 150e6; eta is the class's fit over both documents.
    The engine's own defaults (a design that states no build) are one 128-bit port at 150 MHz on
    one channel with 64 lanes."""
    m = wide.model("stories15m")
    e = wide.engine("hls-stream")
    assert (e.axi_port_bits, e.memory_channels, e.mac_lanes, e.clock_hz) == (128, 1, 64, 150e6)
    pt = next(p for p in v.points(v.load()) if p.engine == "hls-stream" and p.board == "zcu106")
    assert dict(pt.build) == {"clock_MHz": 150.0, "mac_lanes": 1.0, "axi_port_bits": 32.0,
                              "memory_channels": 1.0, "weight_bits": 32.0, "kv_bits": 32.0}
    b = v.measured_build(wide, pt, e)
    c = fpga.fpga_cost(m, b)
    assert shape.layer_params(m) == 995_904 and shape.body_params(m) == 5_975_712
    t_mem = (60_766_848 + 13_824 * 113) / 0.6e9
    t_mac = (6 * 995_328 + 9_216_000 + 2 * 6 * 6 * 48 * 113) / 150e6
    assert t_mem > t_mac
    expect = t_mem / e.achieved_efficiency + (6 * 500 + 500) / 150e6
    assert float(fpga.decode_token_s(c, 112)) == pytest.approx(expect, rel=1e-12)
    # at its own port and clock the design reaches most of its bound (the class fit)
    assert 0.6 < e.achieved_efficiency < 0.95
    assert v.predict(wide, pt, e) == pytest.approx(1 / expect, rel=1e-12)


def test_hls_class_leave_one_source_out(wide):
    """hls-stream is fitted to two documents; each is predicted by the other's fit within the
    spread its intervals rest on, and the intervals read exactly those residuals."""
    from dse.uncertainty import evidence as ev

    pts = [p for p in v.points(v.load()) if p.engine == "hls-stream" and v.predictable(wide, p)]
    n_docs, res = v.engine_loso(wide, pts, wide.engine("hls-stream"))
    assert n_docs == 2
    fitted = {p.id for p in pts if p.fittable}
    errs = {r.id: r.rel_error for r in res}
    assert all(abs(errs[i]) < 0.5 for i in fitted)  # the fitted designs: within 50%
    rows = [r for r in ev.fpga_residuals() if r.engine == "hls-stream"
            and r.source == "leave-one-source-out"]
    assert len(rows) == len(res)


def test_ternary_weights_stream_158_bits(wide):
    """w1.58a8: Qwen2.5-0.5B body weights at 1.58 bits per parameter, a fifth of w8a8's bytes
    (1.58 / 8); the build and its placement report 1.58 bits."""
    from dse.devices.registry import place

    m = wide.model("qwen2.5-0.5b-instruct")
    eng = wide.engine("hls-stream")
    t = fpga.fpga_cost(m, fpga.default_build(wide.fpga("kv260"), eng, weight_bits=1.58))
    i8 = fpga.fpga_cost(m, fpga.default_build(wide.fpga("kv260"), eng, weight_bits=8))
    assert float(t.body_weight_bytes) == pytest.approx(shape.body_params(m) * 1.58 / 8)
    assert float(t.body_weight_bytes) / float(i8.body_weight_bytes) == pytest.approx(1.58 / 8)
    pl = place(wide, m, "kv260", precision_name="w1.58a8", software="hls-stream",
               context_tokens=2048)
    assert pl.weight_bits == 1.58 and pl.fpga_build.activation_bits == 8
    assert not pl.infeasibility()


@pytest.mark.parametrize("bits", [0.5, 0.99, 33.0])
def test_weight_bits_outside_range_are_infeasible(wide, bits):
    """Weights are streamed at 1..32 bits per parameter (fpga.WEIGHT_BITS_RANGE); outside it the
    build says why."""
    b = fpga.default_build(wide.fpga("u280"), wide.engine("flexllm"), weight_bits=bits)
    why = fpga.infeasibility(wide.model("qwen2.5-0.5b-instruct"), b)
    assert any(w.startswith(f"weight_bits {bits:g} outside 1..32") for w in why)
    ok = fpga.default_build(wide.fpga("u280"), wide.engine("flexllm"), weight_bits=1)
    assert not fpga.bit_width_infeasibility(ok)


def test_fpga_only_precisions_stay_off_gpus():
    from dse.devices.registry import KINDS

    assert set(shape.FPGA_ONLY_PRECISIONS) <= set(KINDS.get("fpga").precisions)
    assert not set(shape.FPGA_ONLY_PRECISIONS) & set(KINDS.get("gpu").precisions)
    assert {"w1.58a8", "w2a8", "w3a8"} <= set(fpga.FPGA_PRECISIONS)
    assert fpga.FPGA_PRECISIONS["w1.58a8"] == (1.58, 8)


def test_exporter_refuses_fractional_weight_bits(wide):
    from dse.errors import InfeasibleError
    from dse.exporters.memory import draft_engine

    b = fpga.default_build(wide.fpga("u280"), wide.engine("flexllm"), weight_bits=1.58)
    with pytest.raises(InfeasibleError, match="whole-bit weights"):
        draft_engine(wide.model("qwen2.5-0.5b-instruct"), b)
