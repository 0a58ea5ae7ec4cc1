"""Array type aliases shared by the vectorised model code.

F64: a float64 array. Num: a number or a float64 array of them, as held by the cost-coefficient
dataclasses (one design: floats; a stacked sweep: arrays), so that their arithmetic broadcasts
and type-checks."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
from numpy.typing import NDArray

F64: TypeAlias = NDArray[np.float64]
Num: TypeAlias = float | NDArray[np.float64]
