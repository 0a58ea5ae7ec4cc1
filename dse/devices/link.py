"""Host link (PCIe) transfers: time = per-transfer latency + bytes / effective bandwidth."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.specs import LinkSpec


def transfer_s(
    link: LinkSpec, n_bytes: ArrayLike, *, transfers: ArrayLike = 1
) -> NDArray[np.float64]:
    """Seconds to move n_bytes in `transfers` separate transfers (0 bytes and 0 transfers: 0 s).

    Effective bandwidth is the measured large-transfer figure of the link's catalog file, and the
    latency its measured small-transfer (4 KB) figure; see boards/links/.
    """
    b = np.asarray(n_bytes, dtype=float)
    k = np.asarray(transfers, dtype=float)
    return k * link.latency_s + b / link.effective_bytes_per_s


def token_bytes(n_tokens: ArrayLike, *, bytes_per_token: int = 4) -> NDArray[np.float64]:
    """Token ids cross the link as int32 (4 bytes each), as in RSD's and vLLM's token APIs."""
    return np.asarray(n_tokens, dtype=float) * bytes_per_token
