"""The queueing side of a whole design at load (dse.serving.designs): each device a
processor-sharing server whose speed follows its batch, solved exactly as a birth-death chain;
the design's point at a rate, its capacity, a closed loop of clients (exact mean value
analysis) and a static batch. The model and what it leaves out: dse.serving.designs' docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dse.core.arrays import F64

BISECTIONS = 40  # halvings of the capacity's bracket

if TYPE_CHECKING:  # the design's load is built in dse.serving.designs, which imports this
    from dse.serving.designs import DesignLoad, Device


@dataclass(frozen=True)
class Point:
    """The design at one arrival rate (per replica): each device's mean batch while busy (the
    requests it serves, at most its cap), its mean number of requests (waiting included) and
    its slowdown F (a request's time there over its batch-1 work)."""

    rate: float
    batches: dict[str, float]
    in_service: dict[str, float]
    factors: dict[str, float]
    latency_s: float


GRID_POINTS = 96  # batches at which a device's slowdown is evaluated (interpolated between)


def _curve(dl: DesignLoad, dv: Device) -> tuple[F64, float]:
    """(f_g(k) for k = 1..c, S_g): the device's work-weighted slowdown at each batch up to its
    cap c, and its busy seconds per request."""
    key = (id(dl), dv.name)
    got = _CURVES.get(key)
    if got is not None and got[0] is dl:
        return got[1], got[2]
    members = [r for r in dl.roles if r.device == dv.name and r.busy_s > 0]
    total = sum(r.busy_s for r in members)
    c = max(math.floor(dv.cap), 1)
    grid = np.unique(np.round(np.geomspace(1, c, GRID_POINTS)).astype(int))
    vals = np.array([sum(r.busy_s * r.slowdown(float(k)) for r in members) / total
                     if total > 0 else 1.0 for k in grid])
    f = np.interp(np.arange(1, c + 1), grid, vals)
    _CURVES[key] = (dl, f, total)
    return f, total


_CURVES: dict[tuple[int, str], tuple[DesignLoad, F64, float]] = {}


def _device_state(dl: DesignLoad, dv: Device, rate: float
                  ) -> tuple[float, float, float, float] | None:
    """(E[N], P(N = 0), F, E[min(N, c)]) of the device at `rate`: the birth-death chain of
    requests in it,
    n -> n + 1 at rate, n -> n - 1 at n / (S f(n)) up to its cap c and c / (S f(c)) above it
    (those wait), solved exactly; None where it is unstable (rate >= c / (S f(c)))."""
    f, total = _curve(dl, dv)
    if total <= 0 or rate <= 0:
        return 0.0, 1.0, 1.0, 0.0
    c = f.size
    a = rate * total
    rho_c = a * f[-1] / c
    if rho_c >= 1.0:
        return None
    k = np.arange(1, c + 1, dtype=float)
    logt = np.cumsum(np.log(a * f / k))  # log p(n) / p(0), n = 1..c
    top = max(0.0, float(logt.max()))
    w = np.exp(logt - top)
    p0w = math.exp(-top)
    tail_w = w[-1] * rho_c / (1.0 - rho_c)
    tail_n = w[-1] * (c * rho_c / (1.0 - rho_c) + rho_c / (1.0 - rho_c) ** 2)
    z = p0w + float(w.sum()) + tail_w
    en = (float(np.dot(k, w)) + tail_n) / z
    served = (float(np.dot(k, w)) + c * tail_w) / z
    return en, p0w / z, en / a, served


def point_at(dl: DesignLoad, rate: float, full: str | None = None) -> Point | None:
    """The devices at `rate`; full: a device served at its cap (past capacity: its slowdown
    is f(c), the queue in front of it counted apart)."""
    batches, n, fac = {}, {}, {}
    for dv in dl.devices:
        if dv.name == full:
            f, _ = _curve(dl, dv)
            batches[dv.name], n[dv.name], fac[dv.name] = float(f.size), float(f.size), \
                float(f[-1])
            continue
        st = _device_state(dl, dv, rate)
        if st is None:
            return None
        en, p0, factor, served = st
        batches[dv.name] = served / (1.0 - p0) if p0 < 1.0 else 1.0
        n[dv.name], fac[dv.name] = en, factor
    lat = dl.latency_s + sum(r.critical_s * (fac[r.device] - 1.0) for r in dl.roles)
    return Point(rate, batches, n, fac, lat)


def at_rate(dl: DesignLoad, rate: float) -> Point | None:
    """The design at `rate` (requests/s), or None past capacity (a device unstable, or the
    requests in the system past the KV caches that keep them)."""
    pt = point_at(dl, rate)
    if pt is None:
        return None
    if any(rate * pt.latency_s > dv.keeps_kv for dv in dl.devices):
        return None
    return pt


def bottleneck(dl: DesignLoad) -> tuple[Device, float]:
    """The device with the smallest rate it can serve at its cap, and that rate."""
    best = None
    for dv in dl.devices:
        f, total = _curve(dl, dv)
        mu = f.size / (total * float(f[-1])) if total > 0 else math.inf
        if best is None or mu < best[1]:
            best = (dv, mu)
    assert best is not None
    return best


def capacity(dl: DesignLoad) -> float:
    """The largest rate every device serves stably within the KV caches (bisection below
    the bottleneck's rate at its cap)."""
    if any(dv.cap < 1 for dv in dl.devices):
        return 0.0
    _, hi = bottleneck(dl)
    if math.isinf(hi):
        return hi
    hi *= 1 - 1e-9
    if at_rate(dl, hi) is not None:
        return hi
    lo = 0.0
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        if at_rate(dl, mid) is None:
            hi = mid
        else:
            lo = mid
    return lo


MVA_CLIENTS = 4096  # beyond: the open-loop fixed point lambda = C / latency(lambda)


def closed_loop(dl: DesignLoad, clients: int) -> tuple[float, float, dict[str, float]]:
    """(requests/s, latency, each device's mean batch while busy) of C clients in a closed
    loop: exact mean value analysis of the closed network of the devices' load-dependent
    servers (each device's chance of holding j requests given n in the network, n = 1..C),
    the link's seconds a delay. A device's slowdown F_g = R_g / S_g (its residence over its
    batch-1 work) stretches the critical path as in the open loop; the clients send again as
    their requests' latency ends: lambda = C / latency (exact for one client: the
    single-stream latency; the caller caps it at the open loop's capacity, since the network
    here visits the devices in turn and does not see a request's roles overlapping). Past
    MVA_CLIENTS clients, the open loop's fixed point."""
    devs = [(dv, *_curve(dl, dv)) for dv in dl.devices]
    delay = max(dl.latency_s - sum(r.critical_s for r in dl.roles), 0.0)
    if clients > MVA_CLIENTS:
        hi = capacity(dl) * (1 - 1e-6)

        def held(lam: float) -> float:
            pt = at_rate(dl, lam)
            return math.inf if pt is None else lam * pt.latency_s

        lo = 0.0
        if held(hi) <= clients:
            lo = hi
        else:
            for _ in range(BISECTIONS):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if held(mid) < clients else (lo, mid)
        pt = point_at(dl, lo)
        assert pt is not None
        return lo, clients / lo, pt.batches
    probs = {dv.name: np.zeros(clients + 1) for dv, _, _ in devs}
    for dv, _, _ in devs:
        probs[dv.name][0] = 1.0
    resid: dict[str, float] = {}
    for n in range(1, clients + 1):
        j = np.arange(1, n + 1, dtype=float)
        for dv, f, total in devs:
            fj = np.where(j <= f.size, f[np.minimum(j, f.size).astype(int) - 1], 0.0)
            per = np.where(j <= f.size, total * fj / j, total * float(f[-1]) / f.size)
            resid[dv.name] = float(np.sum(j * per * probs[dv.name][:n]))
        x = n / (delay + sum(resid.values()))
        for dv, f, total in devs:
            j = np.arange(1, n + 1, dtype=float)
            fj = np.where(j <= f.size, f[np.minimum(j, f.size).astype(int) - 1], 0.0)
            per = np.where(j <= f.size, total * fj / j, total * float(f[-1]) / f.size)
            new = np.zeros(clients + 1)
            new[1:n + 1] = x * per * probs[dv.name][:n]
            new[0] = max(1.0 - float(new[1:].sum()), 0.0)
            probs[dv.name] = new
    fac = {dv.name: (resid[dv.name] / total if total > 0 else 1.0) for dv, _, total in devs}
    lat = dl.latency_s + sum(r.critical_s * (fac[r.device] - 1.0) for r in dl.roles)
    batches = {}
    for dv, f, _ in devs:
        p = probs[dv.name]
        k = np.minimum(np.arange(clients + 1), f.size)
        busy = 1.0 - p[0]
        batches[dv.name] = float(np.dot(k, p)) / busy if busy > 0 else 1.0
    return clients / lat, lat, batches


def power_at(dl: DesignLoad, rate: float, batches: dict[str, float]) -> float:
    """Average power of every device at `rate` (module docstring)."""
    idle = sum(dv.idle_w for dv in dl.devices)
    dyn = 0.0
    for r in dl.roles:
        b = batches[r.device]
        dyn += r.dyn_j * r.slowdown(b) / b * r.power_rise(b)
    return idle + rate * dyn


def static(dl: DesignLoad, batch: int) -> tuple[float, float, float]:
    """(mean latency, completion rate, power) of a static batch: every stage at the batch, in
    waves of the smallest cap."""
    cap = max(int(min(dv.cap for dv in dl.devices)), 1)
    size = min(batch, cap)
    waves = math.ceil(batch / size)
    bs = {dv.name: float(size) for dv in dl.devices}
    lat = dl.latency(bs)
    duration = waves * lat
    mean_lat = lat * (waves + 1) / 2 if waves > 1 else lat
    rate = batch / duration
    idle = sum(dv.idle_w for dv in dl.devices)
    dyn = sum(r.dyn_j * r.slowdown(size) / size * r.power_rise(size) * size
              for r in dl.roles) * waves
    return mean_lat, rate, idle + dyn / duration
