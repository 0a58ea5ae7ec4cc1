"""The FPGA draft engine as it will be built: decode parallelism and the memory map.

Derived once from a design, so that `draft_config.h` (hls.py) and `link.ini` (vitis.py) are
two views of one plan and cannot disagree (the header's `tapa::mmaps<..., N>` port counts must
equal the number of `sp=` lines per port, see shared/reference/build-and-host-formats.md 2.2).

Parallelism (FlexLLM's decode knobs, config_u280*.h):
- DEC_QKVO_FFN_W_PARALLEL = AXI port bits / weight bits: the weights one 256-bit port word
  carries, consumed by one GEMV block per cycle (FlexLLM: 64 x 4-bit = 256 bits);
- T_QKVO_FFN_BLOCK_PARALLEL = mac_lanes / W_PARALLEL (FlexLLM: 2048 / 64 = 32 blocks);
- DEC_HEAD_PARALLEL = KV heads processed at once, one K and one V port each;
- DEC_K_PARALLEL = DEC_V_PARALLEL = K/V elements of one port word (FlexLLM: 32 int8).

Memory map over the `memory_channels` banks the cost model streams from (dse.devices.fpga):
- `io_mmap` (token ids in, sampled token out, the KV cache migrated from the GPU at the start
  of a problem) on bank 0;
- `k_caches_i`, `v_caches_i`: DEC_HEAD_PARALLEL ports each; their count follows the KV cache's
  share of the bytes streamed per token at full context (at least one each), rounded down to a
  divisor of the KV heads, raised where one bank cannot hold a share;
- `w_mmaps_i`: every other bank; the streamed weights (layers, final norm, LM head) are
  interleaved row-block-wise over them, so each holds 1/W_MEM_CH of them;
- `emb_mmap`: the input-embedding table (one row read per token) in DDR where the board has
  DDR beside HBM (as FlexLLM keeps its vocabulary table in DDR), else on bank 0.
Where separate groups do not fit (fewer than 2 x DEC_HEAD_PARALLEL + 2 banks, or too few banks
left for the weights), the weights use every bank and the io and KV ports share them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dse.devices import shape
from dse.devices.fpga import FpgaBuild
from dse.errors import InfeasibleError
from dse.specs import ModelSpec

TOP = "HR_DraftDecode"  # the decoder's top-level TAPA task (build-and-host-formats.md 6.4)
# UG1700 (2025.2) "Mapping Kernel Ports to Memory": up to 15 kernel interfaces per memory bank.
MAX_PORTS_PER_BANK = 15


@dataclass(frozen=True)
class Port:
    name: str  # AXI port of the top task: io_mmap, w_mmaps_3, ...
    group: str  # io, emb, w, k, v
    memory: str  # "HBM" or "DDR"
    bank: int
    bytes: float  # bytes of tensors this port holds in its bank

    @property
    def sp(self) -> str:
        return f"{self.memory}[{self.bank}]"


@dataclass(frozen=True)
class DraftEngine:
    model: ModelSpec
    build: FpgaBuild
    memory: str  # memory holding the streamed tensors: "HBM" or "DDR"
    board_banks: int
    bank_bytes: float
    channels: int  # banks the decoder streams from
    shared_banks: bool  # io / KV ports share the weight banks
    w_parallel: int
    block_parallel: int
    head_parallel: int
    kv_parallel: int
    stream_bytes: float  # weights read per token (layers, final norm, LM head)
    emb_bytes: float
    kv_bytes: float  # K and V for max_seq_len tokens
    ports: tuple[Port, ...]

    @property
    def board(self) -> str:
        return self.build.board.name

    def count(self, group: str) -> int:
        return sum(p.group == group for p in self.ports)

    def bank_use(self) -> dict[str, tuple[float, int]]:
        """memory[bank] -> (bytes, ports)."""
        use: dict[str, tuple[float, int]] = {}
        for p in self.ports:
            b, n = use.get(p.sp, (0.0, 0))
            use[p.sp] = (b + p.bytes, n + 1)
        return use


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def draft_engine(model: ModelSpec, build: FpgaBuild) -> DraftEngine:
    """The engine plan; InfeasibleError says why a design cannot be mapped onto its board."""
    board = build.board
    why: list[str] = []
    wbits, kvbits = build.weight_bits, build.kv_bits
    if wbits != int(wbits):
        raise InfeasibleError(f"the FlexLLM-style export packs whole-bit weights; "
                              f"{wbits:g}-bit weights (a sub-bit average such as ternary 1.58) "
                              "need a packing the exporter does not generate")
    wbits = int(wbits)
    if board.axi_port_bits % wbits:
        why.append(f"{wbits}-bit weights do not pack a {board.axi_port_bits}-bit port word")
    w_par = max(board.axi_port_bits // wbits, 1)
    if build.mac_lanes % w_par:
        why.append(f"mac_lanes {build.mac_lanes} is not a multiple of the {w_par} weights of "
                   f"one {board.axi_port_bits}-bit port word ({wbits}-bit weights)")
    blocks = max(build.mac_lanes // w_par, 1)
    memory = "HBM" if board.uses_hbm else "DDR"
    c = build.memory_channels
    bank_bytes = board.weight_memory_bytes / board.memory_channels
    stream = shape.streamed_params_per_token(model) * wbits / 8
    emb = shape.embedding_params(model) * wbits / 8
    kv = shape.kv_bytes_per_token(model, kvbits) * build.max_seq_len
    divs = _divisors(model.num_kv_heads)
    want = max(1, round(c * kv / (kv + stream) / 2))
    n_kv = max(d for d in divs if d <= want)
    while kv / 2 / n_kv > bank_bytes and n_kv < divs[-1]:
        n_kv = divs[divs.index(n_kv) + 1]
    split_emb = board.uses_hbm and board.ddr_channels > 0
    eng = None
    fails: list[str] = []
    for shared in ((False, True) if c >= 2 * n_kv + 2 else (True,)):
        n_w = c if shared else c - 1 - 2 * n_kv
        k_banks = [(1 + i) % c for i in range(n_kv)]
        v_banks = [(1 + n_kv + i) % c for i in range(n_kv)]
        w_banks = list(range(c)) if shared else list(range(1 + 2 * n_kv, c))
        ports = [Port("io_mmap", "io", memory, 0, 0.0)]
        ports += [Port(f"k_caches_{i}", "k", memory, b, kv / 2 / n_kv)
                  for i, b in enumerate(k_banks)]
        ports += [Port(f"v_caches_{i}", "v", memory, b, kv / 2 / n_kv)
                  for i, b in enumerate(v_banks)]
        ports += [Port(f"w_mmaps_{i}", "w", memory, b, stream / n_w)
                  for i, b in enumerate(w_banks)]
        ports.append(Port("emb_mmap", "emb", "DDR" if split_emb else memory, 0, emb))
        eng = DraftEngine(
            model=model, build=build, memory=memory, board_banks=board.memory_channels,
            bank_bytes=bank_bytes, channels=c, shared_banks=shared, w_parallel=w_par,
            block_parallel=blocks, head_parallel=n_kv,
            kv_parallel=min(board.axi_port_bits // kvbits, head_dim_pad(model)),
            stream_bytes=stream, emb_bytes=emb, kv_bytes=kv, ports=tuple(ports))
        fails = _capacity(eng)
        if not fails:
            break
    assert eng is not None
    why += fails
    if why:
        raise InfeasibleError(f"cannot export the {model.name} draft for {board.name}: "
                              + "; ".join(why))
    return eng


def _capacity(e: DraftEngine) -> list[str]:
    board = e.build.board
    why: list[str] = []
    ddr_bank = board.ddr_bytes / board.ddr_channels if board.ddr_channels else 0.0
    for sp, (used, n) in sorted(e.bank_use().items()):
        cap = ddr_bank if sp.startswith("DDR") and e.memory == "HBM" else e.bank_bytes
        if used > cap:
            groups = sorted({p.group for p in e.ports if p.sp == sp})
            if groups == ["w"]:
                n_w = e.count("w")
                hint = "; raise fpga.channels" if e.channels < e.board_banks else ""
                why.append(
                    f"weights {e.stream_bytes / 1e9:.2f} GB do not fit {board.name} {e.memory} "
                    f"with KV for {e.build.max_seq_len} tokens: {n_w} weight channel"
                    f"{'s' if n_w > 1 else ''} x {e.bank_bytes / 1e6:.0f} MB = "
                    f"{n_w * e.bank_bytes / 1e9:.2f} GB ({e.channels} of {e.board_banks} "
                    f"channels used{hint})")
                break
            why.append(f"{'/'.join(groups)} need {used / 1e6:.0f} MB in {sp}, which holds "
                       f"{cap / 1e6:.0f} MB")
        if n > MAX_PORTS_PER_BANK:
            why.append(f"{n} ports on {sp}; at most {MAX_PORTS_PER_BANK} per bank (UG1700)")
    return why


def head_dim_pad(model: ModelSpec) -> int:
    """Head dimension padded to a power of two (the attention reduction tree)."""
    return 1 << max(model.head_dim - 1, 0).bit_length()


def pad_to(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def lcm(a: int, b: int) -> int:
    return a * b // math.gcd(a, b)
