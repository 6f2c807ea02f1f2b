"""OpenCV's ``filter2D`` of an 8-bit image with a defocus disk, as exact integer tap sums: faster.

defocus_blur's reference computes ``cv2.filter2D(x / 255., -1, kernel)`` (float64, edges
reflected without repeating the border pixel, OpenCV's ``BORDER_REFLECT_101``) and then
``np.uint8(np.clip(y, 0, 1) * 255)``. OpenCV runs that correlation through its DFT (the
kernel is 17x17 or larger): 4-7 ms per channel of a 640x427 image on one core (AMD EPYC, Zen 3).

The disk kernel is a float32 array with few distinct values (4 to 40 for imagecorruptions'
five severities). Grouping the taps by value, the correlation at a pixel is
``sum_g c_g * S_g`` where ``S_g`` is the sum of the 8-bit pixel values under the taps of value
``c_g``: an integer, computed exactly with integer additions (vectorised, 16-bit lanes where the
sums fit). A kernel that is symmetric top to bottom (every defocus disk) first adds each pair of
mirrored rows, halving the additions, and a long vertical run of equal taps (the disk's flat
interior) costs one difference of column prefix sums instead of one addition per tap. Only the
final ``sum_g c_g * S_g`` is floating point (float64, one multiply-add per group), so the value
is the exact correlation up to a few units in the last place, as OpenCV's DFT result is.

Bit-identity after the uint8 step: both routes compute the same real number, each to about
1e-13 grey levels; the truncation to uint8 differs only if that number lies within that distance
of an integer grey level. The defocus kernels' sums differ from 1 by at least 3.7e-9, so flat
regions (where the value is the grey level times that sum) stay clear of the integers, and
elsewhere the chance is about 1e-13 per value. The tests check identity with OpenCV on
the golden and parity images, random images and flat images of every grey level.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cv2
import numba
import numpy as np

__all__ = ["TapPlan", "filter_uint8", "plan_taps", "tap_sums_pay"]

#: Vertical runs of equal taps at least this long use column prefix sums (one difference)
#: instead of one addition per tap.
MIN_RUN = 3
#: Output values per row chunk (a whole row of images up to 1365 px wide, 3 channels): wider
#: rows are done in chunks so the paired rows and accumulators stay in the cache. Smaller
#: chunks measured slower (the per-chunk set-up and the overlap of the padded rows cost more
#: than L1 instead of L2 hits save).
CHUNK = 4096
#: Group sums up to this fit 16-bit accumulators (uint16 arithmetic wraps, and a sum of
#: non-negative pixel values below 2**16 comes out exact).
_U16_MAX = 65535


@dataclass(frozen=True)
class TapPlan:
    """A correlation kernel as groups of equal taps (see the module docstring).

    Attributes
    ----------
    half_y, half_x : int
        The kernel is (2 half_y + 1) x (2 half_x + 1); its centre is the anchor.
    paired : bool
        The kernel equals its upside-down copy: mirrored rows are added first, and ``tap_row``
        counts rows from the centre (0 .. half_y).
    coef : np.ndarray
        float64 (G,): the distinct non-zero kernel values, one per group.
    tap_start, tap_row, tap_col : np.ndarray
        int64: group g's single taps are ``tap_row[tap_start[g]:tap_start[g + 1]]`` etc.;
        ``tap_col`` is the kernel column (0 .. 2 half_x).
    run_start, run_col, run_lo, run_hi : np.ndarray
        int64: group g's vertical runs, kernel rows ``run_lo`` .. ``run_hi - 1`` of column
        ``run_col``.
    wide : bool
        Some group's sum can exceed 16 bits (32-bit accumulators are used).
    """

    half_y: int
    half_x: int
    paired: bool
    coef: np.ndarray
    tap_start: np.ndarray
    tap_row: np.ndarray
    tap_col: np.ndarray
    run_start: np.ndarray
    run_col: np.ndarray
    run_lo: np.ndarray
    run_hi: np.ndarray
    wide: bool

    @property
    def groups(self) -> int:
        return int(self.coef.shape[0])

    @property
    def rows_used(self) -> int:
        """Rows of paired (or plain) kernel rows the single taps read: 1 + the largest ``tap_row``."""
        return int(self.tap_row.max()) + 1 if self.tap_row.shape[0] else 0

    @property
    def loads(self) -> int:
        """Row additions per output value: single taps plus two per run."""
        return int(self.tap_row.shape[0] + 2 * self.run_col.shape[0])


def _vertical_runs(column: np.ndarray, min_run: int) -> list[tuple[int, int]]:
    """(start, stop) of the runs of True in ``column`` at least ``min_run`` long."""
    runs, i, n = [], 0, column.shape[0]
    while i < n:
        if not column[i]:
            i += 1
            continue
        stop = i
        while stop < n and column[stop]:
            stop += 1
        if stop - i >= min_run:
            runs.append((i, stop))
        i = stop
    return runs


def plan_taps(kernel: np.ndarray, *, min_run: int = MIN_RUN) -> TapPlan:
    """Group the taps of a 2-D correlation kernel by value (see :class:`TapPlan`).

    Parameters
    ----------
    kernel : np.ndarray
        2-D, odd height and width, float32 or float64 (values are taken exactly, as float64).
    min_run : int
        Shortest vertical run of equal taps summed by column prefix sums.
    """
    k = np.asarray(kernel)
    if k.ndim != 2 or k.shape[0] % 2 == 0 or k.shape[1] % 2 == 0:
        raise ValueError(f"the kernel must be 2-D with odd height and width; got shape {k.shape}")
    if not np.issubdtype(k.dtype, np.floating):
        raise TypeError(f"the kernel must be float32 or float64; got {k.dtype}")
    k = k.astype(np.float64)
    if not np.all(np.isfinite(k)):
        raise ValueError("the kernel has non-finite values")
    hy, hx = k.shape[0] // 2, k.shape[1] // 2
    paired = bool(np.array_equal(k, k[::-1]))
    values = np.unique(k[k != 0])[::-1]  # largest first
    tap_start, tap_row, tap_col = [0], [], []
    run_start, run_col, run_lo, run_hi = [0], [], [], []
    biggest = 0
    for value in values:
        mask = k == value
        biggest = max(biggest, int(mask.sum()))
        for j in range(k.shape[1]):
            column = mask[:, j].copy()
            for lo, hi in _vertical_runs(column, min_run):
                run_col.append(j)
                run_lo.append(lo)
                run_hi.append(hi)
                column[lo:hi] = False
            # Runs of a top-bottom symmetric kernel come in mirrored pairs (or are centred), so
            # the taps left over are symmetric too: one tap per mirrored pair.
            rows = np.nonzero(column[hy:] if paired else column)[0]
            tap_row.extend(rows.tolist())
            tap_col.extend([j] * rows.shape[0])
        tap_start.append(len(tap_row))
        run_start.append(len(run_col))
    as_index = functools.partial(np.asarray, dtype=np.int64)
    return TapPlan(hy, hx, paired, values.copy(), as_index(tap_start), as_index(tap_row), as_index(tap_col),
                   as_index(run_start), as_index(run_col), as_index(run_lo), as_index(run_hi),
                   wide=biggest * 255 > _U16_MAX)


@numba.njit(cache=True, nogil=True)
def _column_prefix(padded, prefix):  # pragma: no cover - compiled
    # prefix[r] = sum of padded rows 0 .. r-1, in prefix's (wrapping) integer type.
    for t in range(prefix.shape[1]):
        prefix[0, t] = 0
    for r in range(padded.shape[0]):
        src = padded[r]
        below = prefix[r]
        dst = prefix[r + 1]
        for t in range(dst.shape[0]):
            dst[t] = below[t] + src[t]


@numba.njit(cache=True, nogil=True, inline="always")
def _group_sum(a, rows_q, prefix, y, x0, channels, length, s0, s1, tap_row, tap_col, r0, r1,
               run_col, run_lo, run_hi):  # pragma: no cover - compiled
    # a[:length] = the group's taps (rows of rows_q, which start at padded column x0) plus its
    # runs (differences of prefix rows), four taps or two runs per pass so that the
    # accumulator is loaded and stored less often. Integer arithmetic, wrapping in a's type
    # (the true sums fit).
    first = True
    s = s0
    while s + 4 <= s1:
        o0, o1, o2, o3 = (tap_col[s] * channels, tap_col[s + 1] * channels, tap_col[s + 2] * channels,
                          tap_col[s + 3] * channels)
        p0 = rows_q[tap_row[s], o0:o0 + length]
        p1 = rows_q[tap_row[s + 1], o1:o1 + length]
        p2 = rows_q[tap_row[s + 2], o2:o2 + length]
        p3 = rows_q[tap_row[s + 3], o3:o3 + length]
        if first:
            for t in range(length):
                a[t] = (p0[t] + p1[t]) + (p2[t] + p3[t])
            first = False
        else:
            for t in range(length):
                a[t] += (p0[t] + p1[t]) + (p2[t] + p3[t])
        s += 4
    while s < s1:
        if s + 2 <= s1:
            o0, o1 = tap_col[s] * channels, tap_col[s + 1] * channels
            p0 = rows_q[tap_row[s], o0:o0 + length]
            p1 = rows_q[tap_row[s + 1], o1:o1 + length]
            if first:
                for t in range(length):
                    a[t] = p0[t] + p1[t]
                first = False
            else:
                for t in range(length):
                    a[t] += p0[t] + p1[t]
            s += 2
        else:
            o0 = tap_col[s] * channels
            p0 = rows_q[tap_row[s], o0:o0 + length]
            if first:
                for t in range(length):
                    a[t] = p0[t]
                first = False
            else:
                for t in range(length):
                    a[t] += p0[t]
            s += 1
    for r in range(r0, r1):
        o0 = x0 + run_col[r] * channels
        h0 = prefix[y + run_hi[r], o0:o0 + length]
        l0 = prefix[y + run_lo[r], o0:o0 + length]
        if first:
            for t in range(length):
                a[t] = h0[t] - l0[t]
            first = False
        else:
            for t in range(length):
                a[t] += h0[t] - l0[t]
    if first:  # a group without taps (not made by plan_taps)
        for t in range(length):
            a[t] = 0


@numba.njit(cache=True, nogil=True)
def _correlate_rows(padded, prefix, hy, hx, channels, rows, cols, paired, n_rows_q, coef, tap_start,
                    tap_row, tap_col, run_start, run_col, run_lo, run_hi, acc_zero, chunk, out,
                    to_uint8):  # pragma: no cover - compiled
    # Output row y, values x0 .. x0 + chunk - 1 at a time (so the rows below stay in the L1
    # cache): rows_q[i] = padded rows y+hy+i and y+hy-i added (paired) or padded row y+i, from
    # padded column x0 on; the integer sums of 4 groups at a time into acc; row_sum +=
    # c_g * acc[u]; then out = row_sum / 255 (OpenCV's value for x / 255.) or its uint8
    # truncation, clipped to [0, 255].
    length = cols * channels
    span = chunk + 2 * hx * channels
    rows_q = np.empty((max(n_rows_q, 1), span), np.uint16)
    acc = np.empty((4, chunk), acc_zero.dtype)
    row_sum = np.empty(chunk)
    n_groups = coef.shape[0]
    for y in range(rows):
        centre = y + hy
        dst_row = out[y]
        for x0 in range(0, length, chunk):
            n = min(chunk, length - x0)
            m = n + 2 * hx * channels
            if paired:
                src = padded[centre, x0:x0 + m]
                q = rows_q[0]
                for t in range(m):
                    q[t] = src[t]
                for i in range(1, n_rows_q):
                    a = padded[centre + i, x0:x0 + m]
                    b = padded[centre - i, x0:x0 + m]
                    q = rows_q[i]
                    for t in range(m):
                        q[t] = a[t] + b[t]
            else:
                for i in range(n_rows_q):
                    src = padded[y + i, x0:x0 + m]
                    q = rows_q[i]
                    for t in range(m):
                        q[t] = src[t]
            for t in range(n):
                row_sum[t] = 0.0
            for g0 in range(0, n_groups, 4):
                block = min(4, n_groups - g0)
                for u in range(block):
                    g = g0 + u
                    _group_sum(acc[u], rows_q, prefix, y, x0, channels, n, tap_start[g], tap_start[g + 1],
                               tap_row, tap_col, run_start[g], run_start[g + 1], run_col, run_lo, run_hi)
                if block == 4:
                    c0, c1, c2, c3 = coef[g0], coef[g0 + 1], coef[g0 + 2], coef[g0 + 3]
                    a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
                    for t in range(n):
                        row_sum[t] += c0 * a0[t] + c1 * a1[t] + c2 * a2[t] + c3 * a3[t]
                else:
                    for u in range(block):
                        c = coef[g0 + u]
                        a = acc[u]
                        for t in range(n):
                            row_sum[t] += c * a[t]
            dst = dst_row[x0:x0 + n]
            if to_uint8:
                for t in range(n):
                    dst[t] = np.uint8(min(max(row_sum[t], 0.0), 255.0))
            else:
                for t in range(n):
                    dst[t] = row_sum[t] / 255.0


@functools.lru_cache(maxsize=64)
def _cached_plan(shape: tuple[int, int], data: bytes, dtype: str) -> TapPlan:
    return plan_taps(np.frombuffer(data, dtype=dtype).reshape(shape))


def _plan_of(kernel: np.ndarray) -> TapPlan:
    k = np.ascontiguousarray(kernel)
    return _cached_plan(k.shape, k.tobytes(), k.dtype.str)


#: Cost of the tap sums per output value, in units of one group's float multiply-add: a row
#: addition (single tap, or half a run) costs about 0.2 of it (16-bit integer lanes against
#: float64 ones). Measured on an AMD EPYC (Zen 3, one thread): a unit is 0.18-0.32 ns per value
#: and OpenCV's DFT filter2D 14-24 ns per value (70-120 units) at 224x224 and 640x427. Kernels
#: up to :data:`MAX_COST` units take the tap sums: all of defocus_blur's. The dearest,
#: imagecorruptions' severity 5 (40 groups, 159 row additions: 72 units), measured level with
#: OpenCV at 224x224 and 1.3x faster at 640x427; severities 1-4 (10-34 units) 1.8-7.5x faster.
LOAD_COST = 0.2
MAX_COST = 80.0


def tap_sums_pay(kernel: np.ndarray) -> bool:
    """Whether :func:`filter_uint8` is expected to beat OpenCV's DFT ``filter2D`` for ``kernel``."""
    plan = _plan_of(kernel)
    return plan.groups + LOAD_COST * plan.loads <= MAX_COST


def filter_uint8(image: np.ndarray, kernel: np.ndarray, *, to_uint8: bool = True) -> np.ndarray:
    """``cv2.filter2D(image / 255., -1, kernel)`` for an 8-bit image, computed from integer tap sums.

    Parameters
    ----------
    image : np.ndarray
        uint8, HxW or HxWxC (channels filtered independently), at least 2 pixels per side.
    kernel : np.ndarray
        2-D float kernel with odd sides, anchored at its centre (correlation, as filter2D).
        Fastest when it has few distinct values and equals its upside-down copy (disks).
    to_uint8 : bool
        True: return ``np.uint8(np.clip(y, 0, 1) * 255)`` of the filtered ``y`` (defocus
        blur's output step), computed as the truncation of the exact value in grey levels.
        False: return ``y`` itself (float64).

    Returns
    -------
    np.ndarray
        ``image``'s shape; uint8 or float64 (see ``to_uint8``). Edges as OpenCV's
        ``BORDER_REFLECT_101``.
    """
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise TypeError(f"filter_uint8 needs a uint8 HxW or HxWxC image; got {image.dtype} {image.shape}")
    if min(image.shape[:2]) < 2:
        raise ValueError(f"filter_uint8 needs at least 2x2 pixels; got {image.shape[:2]}")
    plan = _plan_of(kernel)
    rows, cols = image.shape[:2]
    channels = 1 if image.ndim == 2 else image.shape[2]
    hy, hx = plan.half_y, plan.half_x
    padded = cv2.copyMakeBorder(np.ascontiguousarray(image), hy, hy, hx, hx, cv2.BORDER_REFLECT_101)
    padded = padded.reshape(padded.shape[0], -1)
    acc_type = np.uint32 if plan.wide else np.uint16
    if plan.run_col.shape[0]:
        prefix = np.empty((padded.shape[0] + 1, padded.shape[1]), acc_type)
        _column_prefix(padded, prefix)
    else:
        prefix = np.empty((1, padded.shape[1]), acc_type)
    length = cols * channels
    out = np.empty(image.shape, np.uint8 if to_uint8 else np.float64)
    _correlate_rows(padded, prefix, hy, hx, channels, rows, cols, plan.paired, plan.rows_used, plan.coef,
                    plan.tap_start,
                    plan.tap_row, plan.tap_col, plan.run_start, plan.run_col, plan.run_lo, plan.run_hi,
                    np.zeros(1, acc_type), CHUNK, out.reshape(rows, length), to_uint8)
    return out
