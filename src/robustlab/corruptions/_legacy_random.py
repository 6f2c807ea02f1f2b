"""NumPy's legacy ``RandomState`` samplers for images, compiled: the same draws, faster.

Covered: ``poisson`` (shot_noise), ``normal`` (gaussian and speckle noise, snow, spatter),
``random_sample`` and ``uniform`` (impulse noise, elastic_transform) and ``randint`` below 2**32
values (glass blur's offsets). Each makes the same draws from the same Mersenne Twister stream
as NumPy and leaves the RandomState in the same state (key, position, cached Gaussian).

How they are faster:

- The generator is run a block (624 words) at a time: the block is regenerated when NumPy
  would regenerate it (when its next word is needed), tempered at once and, for the
  floating-point samplers, turned into 53-bit doubles at once (``mt19937_next_double``),
  vectorised; the samplers then take words or doubles in order.
- poisson: an 8-bit image has at most 256 distinct rates, so the constants of NumPy's sampler
  (a square root, logarithms, divisions, an exponential) are computed once per grey level,
  with the same operations, hence the same float64 values.
- normal: every candidate pair of the polar method takes four words whether accepted or not,
  so a whole block is turned into candidates at once, the accepted ones are listed without
  branches, and only they reach the logarithm; the second value of the last pair is kept for
  the next call, as NumPy keeps it.
- The state is read and written in place (NumPy's C struct, through the bit generator's ctypes
  interface, checked once against its ``state`` property) instead of through
  ``get_state``/``set_state``, which copy the 624 words one at a time (about 40 us each way).

The algorithms are NumPy's (``numpy/random/src``): MT19937 with 53-bit doubles;
``random_poisson``: 0 for a rate of 0, the multiplication method below 10, Hoermann's
transformed rejection (PTRS) from 10 on, with ``random_loggam``; ``legacy_gauss`` /
``legacy_normal``; ``random_uniform`` (low + range * double); ``buffered_bounded_masked_uint32``.
A RandomState on another bit generator than MT19937 is served by NumPy itself.

The kernels call them through :mod:`._sampler_route` (``draw_normal``...), which takes NumPy's own
sampler instead where it measures clearly faster on this CPU.
"""

from __future__ import annotations

import ctypes
import math

import numba
import numpy as np

__all__ = ["normal", "poisson_levels", "randint", "uniform"]

_N, _M = 624, 397
# Unsigned 64-bit constants: numba keeps every MT19937 expression in uint64 (mixing signed and
# unsigned 64-bit integers would make it fall back to float64).
_MATRIX_A = np.uint64(0x9908B0DF)
_UPPER = np.uint64(0x80000000)
_LOWER = np.uint64(0x7FFFFFFF)
_MASK_B = np.uint64(0x9D2C5680)
_MASK_C = np.uint64(0xEFC60000)
_ONE = np.uint64(1)
_LOGGAM_COEF = np.array([8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04,
                         -5.952380952380952e-04, 8.417508417508418e-04, -1.917526917526918e-03,
                         6.410256410256410e-03, -2.955065359477124e-02, 1.796443723688307e-01,
                         -1.39243221690590e+00])


@numba.njit(cache=True, nogil=True, inline="always")
def _twist(key, i, i1, im):  # pragma: no cover - compiled
    y = (np.uint64(key[i]) & _UPPER) | (np.uint64(key[i1]) & _LOWER)
    v = np.uint64(key[im]) ^ (y >> _ONE)
    if y & _ONE:
        v ^= _MATRIX_A
    key[i] = v


@numba.njit(cache=True, nogil=True)
def _regenerate(key):  # pragma: no cover - compiled
    # mt19937_gen: the next 624 words of the state, in place (its three loops).
    for i in range(_N - _M):
        _twist(key, i, i + 1, i + _M)
    for i in range(_N - _M, _N - 1):
        _twist(key, i, i + 1, i + _M - _N)
    _twist(key, _N - 1, 0, _M - 1)


@numba.njit(cache=True, nogil=True)
def _loggam(x, coef):  # pragma: no cover - compiled
    # random_loggam.
    if x == 1.0 or x == 2.0:
        return 0.0
    n = int(7 - x) if x < 7.0 else 0
    x0 = x + n
    x2 = (1.0 / x0) * (1.0 / x0)
    gl0 = coef[9]
    for k in range(8, -1, -1):
        gl0 *= x2
        gl0 += coef[k]
    gl = gl0 / x0 + 0.5 * 1.8378770664093453e+00 + (x0 - 0.5) * math.log(x0) - x0
    if x < 7.0:
        for _ in range(n):
            gl -= math.log(x0 - 1.0)
            x0 -= 1.0
    return gl


@numba.njit(cache=True, nogil=True)
def _temper_into(key, start, dst, at):  # pragma: no cover - compiled
    # dst[at + i] = the tempered word key[start + i], i = 0 .. 623 - start (mt19937_next's
    # output for those positions), vectorised.
    for i in range(_N - start):
        y = np.uint64(key[start + i])
        y ^= y >> np.uint64(11)
        y ^= (y << np.uint64(7)) & _MASK_B
        y ^= (y << np.uint64(15)) & _MASK_C
        y ^= y >> np.uint64(18)
        dst[at + i] = y


@numba.njit(cache=True, nogil=True)
def _fill_doubles(key, words, doubles, carried, first):  # pragma: no cover - compiled
    # After words[0:carried] (0 or 1, left from the previous block): this block's words from
    # position `first` on, tempered, then every mt19937_next_double they make, vectorised.
    _temper_into(key, first, words, carried)
    available = carried + _N - first
    n_doubles = available // 2
    for k in range(n_doubles):
        a = np.int64(words[2 * k]) >> 5
        b = np.int64(words[2 * k + 1]) >> 6
        doubles[k] = (np.float64(a) * 67108864.0 + np.float64(b)) / 9007199254740992.0
    return n_doubles, available


@numba.njit(cache=True, nogil=True)
def _next_block_doubles(key, words, doubles, n_doubles, available):  # pragma: no cover - compiled
    # All doubles of the block taken and one more needed: carry an odd last word, regenerate
    # the state (NumPy does so exactly when the next word is needed), fill again.
    carried = available - 2 * n_doubles
    if carried:
        words[0] = words[2 * n_doubles]
    _regenerate(key)
    n_doubles, available = _fill_doubles(key, words, doubles, carried, 0)
    return n_doubles, available, carried


@numba.njit(cache=True, nogil=True)
def _uniform_fill(out, low, span, scaled, key, pos):  # pragma: no cover - compiled
    # out[i] = mt19937_next_double() in order (random_sample), or low + span * it (scaled:
    # legacy random_uniform), a block of doubles at a time.
    words = np.empty(_N + 2, np.uint32)
    doubles = np.empty(_N // 2 + 1)
    first, carried = pos, 0
    n_doubles, available = _fill_doubles(key, words, doubles, carried, first)
    di = 0
    i = 0
    n = out.shape[0]
    while i < n:
        if di >= n_doubles:
            n_doubles, available, carried = _next_block_doubles(key, words, doubles, n_doubles, available)
            first, di = 0, 0
        take = min(n - i, n_doubles - di)
        if scaled:
            for t in range(take):
                out[i + t] = low + span * doubles[di + t]
        else:
            for t in range(take):
                out[i + t] = doubles[di + t]
        i += take
        di += take
    return first + 2 * di - carried


@numba.njit(cache=True, nogil=True)
def _masked_fill(out, low, span, mask, key, pos):  # pragma: no cover - compiled
    # out[i] = low + v, v = the next tempered word & mask, words with v > span skipped
    # (buffered_bounded_masked_uint32: NumPy's legacy randint below 2**32 values), words
    # tempered a block at a time. Returns the state's position after the last word taken.
    words = np.empty(_N, np.uint32)
    first = pos
    _temper_into(key, first, words, 0)
    available = _N - first
    t = 0
    i = 0
    n = out.shape[0]
    while i < n:
        if t >= available:
            _regenerate(key)
            _temper_into(key, 0, words, 0)
            first, t, available = 0, 0, _N
        if mask == span:  # a power-of-two range: no word is rejected (vectorised)
            take = min(n - i, available - t)
            for j in range(take):
                out[i + j] = low + (np.int64(words[t + j]) & mask)
            i += take
            t += take
            continue
        v = np.int64(words[t]) & mask
        t += 1
        if v <= span:
            out[i] = low + v
            i += 1
    return first + t


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _poisson_constants(lam, coef):  # pragma: no cover - compiled
    # Per rate, NumPy's constants: exp(-lam) for the multiplication method and, from 10 on,
    # PTRS's log(lam), a, b, log(1/alpha) and v_r; and random_loggam(k + 1) for the counts k
    # the rates make likely (others call _loggam).
    n_levels = lam.shape[0]
    enlam = np.empty(n_levels)
    loglam = np.empty(n_levels)
    pa = np.empty(n_levels)
    pb = np.empty(n_levels)
    log_invalpha = np.empty(n_levels)
    vr = np.empty(n_levels)
    top = 0.0
    for v in range(n_levels):
        top = max(top, lam[v])
    loggam = np.empty(int(top + 10 * math.sqrt(top)) + 64)
    for k in range(loggam.shape[0]):
        loggam[k] = _loggam(k + 1.0, coef)
    for v in range(n_levels):
        lv = lam[v]
        enlam[v] = math.exp(-lv)
        if lv >= 10:
            loglam[v] = math.log(lv)
            pb[v] = 0.931 + 2.53 * math.sqrt(lv)
            pa[v] = -0.059 + 0.02483 * pb[v]
            log_invalpha[v] = math.log(1.1239 + 1.1328 / (pb[v] - 3.4))
            vr[v] = 0.9277 - 3.6224 / (pb[v] - 2)
    return enlam, loglam, pa, pb, log_invalpha, vr, loggam


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _draw(levels, lam, key, pos, coef):  # pragma: no cover - compiled
    # counts[i] = Poisson(lam[levels[i]]), drawn in order from the MT19937 state (key, pos).
    enlam, loglam, pa, pb, log_invalpha, vr, loggam = _poisson_constants(lam, coef)
    counts = np.empty(levels.shape[0], np.int64)
    # The doubles of the stream, a block at a time (see _fill_doubles): di is the next one,
    # n_doubles how many the block made; `first` the block position they start from.
    words = np.empty(_N + 2, np.uint32)
    doubles = np.empty(_N // 2 + 1)
    first, carried = pos, 0
    n_doubles, available = _fill_doubles(key, words, doubles, carried, first)
    di = 0
    for i in range(levels.shape[0]):
        v = levels[i]
        lv = lam[v]
        if lv >= 10:
            a = pa[v]
            b = pb[v]
            while True:
                if di >= n_doubles:
                    n_doubles, available, carried = _next_block_doubles(key, words, doubles, n_doubles, available)
                    first, di = 0, 0
                u = doubles[di] - 0.5
                di += 1
                if di >= n_doubles:
                    n_doubles, available, carried = _next_block_doubles(key, words, doubles, n_doubles, available)
                    first, di = 0, 0
                w = doubles[di]
                di += 1
                us = 0.5 - abs(u)
                t = math.floor((2 * a / us + b) * u + lv + 0.43)
                if not abs(t) < 9.2e18:
                    # us (almost) 0: C's float -> int64 cast gives INT64_MIN, so NumPy
                    # rejects the pair (k < 0) - here without the undefined cast.
                    continue
                k = int(t)
                if us >= 0.07 and w <= vr[v]:
                    break
                if k < 0 or (us < 0.013 and w > us):
                    continue
                lg = loggam[k] if k < loggam.shape[0] else _loggam(k + 1.0, coef)
                if (math.log(w) + log_invalpha[v] - math.log(a / (us * us) + b)) <= (-lv + k * loglam[v] - lg):
                    break
            counts[i] = k
        elif lv == 0:
            counts[i] = 0
        else:
            x = 0
            prod = 1.0
            while True:
                if di >= n_doubles:
                    n_doubles, available, carried = _next_block_doubles(key, words, doubles, n_doubles, available)
                    first, di = 0, 0
                prod *= doubles[di]
                di += 1
                if prod > enlam[v]:
                    x += 1
                else:
                    break
            counts[i] = x
    # A block is refilled only when a double of it is taken, so the state is the current
    # block at the word after the last double taken.
    return counts, first + 2 * di - carried


@numba.njit(cache=True, nogil=True)
def _gauss_fill(out, loc, scale, key, pos, has_gauss, gauss):  # pragma: no cover - compiled
    # out[i] = loc + scale * legacy_gauss() in order; returns the generator's state after.
    # legacy_gauss draws candidate pairs (x1, x2) of two doubles (four words) each until
    # 0 < x1^2 + x2^2 < 1, returns f * x2 and keeps f * x1 for the next call. Every candidate
    # takes exactly four words whether accepted or not, so a whole block of the Mersenne
    # Twister (624 words, regenerated only when the draw needs it, as NumPy does) is turned
    # into candidates at once (vectorised), the accepted ones listed without branches, and
    # only they reach the logarithm: the same numbers in the same order as NumPy's loop.
    n = out.shape[0]
    i = 0
    if n and has_gauss:
        out[0] = loc + scale * gauss
        i = 1
        has_gauss = False
        gauss = 0.0
    if i >= n:
        return pos, has_gauss, gauss
    words = np.empty(_N + 4, np.uint32)
    x1s = np.empty(_N // 4 + 1)
    x2s = np.empty(_N // 4 + 1)
    r2s = np.empty(_N // 4 + 1)
    accepted = np.empty(_N // 4 + 1, np.int64)
    # The pending words: `carried` (0..3) left from the previous block, then this block's
    # words from position `first` on.
    carried = 0
    first = pos
    available = _N - pos
    _temper_into(key, pos, words, 0)
    while True:
        n_candidates = available // 4
        for c in range(n_candidates):
            a = np.int64(words[4 * c]) >> 5
            b = np.int64(words[4 * c + 1]) >> 6
            d = np.int64(words[4 * c + 2]) >> 5
            e = np.int64(words[4 * c + 3]) >> 6
            # mt19937_next_double twice, then 2 u - 1
            x1 = 2.0 * ((np.float64(a) * 67108864.0 + np.float64(b)) / 9007199254740992.0) - 1.0
            x2 = 2.0 * ((np.float64(d) * 67108864.0 + np.float64(e)) / 9007199254740992.0) - 1.0
            x1s[c] = x1
            x2s[c] = x2
            r2s[c] = x1 * x1 + x2 * x2
        m = 0
        for c in range(n_candidates):
            r2 = r2s[c]
            accepted[m] = c
            m += not (r2 >= 1.0 or r2 == 0.0)
        last = -1
        for j in range(m):
            c = accepted[j]
            r2 = r2s[c]
            f = math.sqrt(-2.0 * math.log(r2) / r2)
            last = c
            out[i] = loc + scale * (f * x2s[c])
            i += 1
            if i >= n:
                has_gauss = True
                gauss = f * x1s[c]
                break
            out[i] = loc + scale * (f * x1s[c])
            i += 1
            if i >= n:
                break
        if i >= n:
            # The last candidate used ends 4 (last + 1) pending words in; it took at least
            # one word of this block, so the state is this block at the word after it.
            return first + 4 * (last + 1) - carried, has_gauss, gauss
        rest = available - 4 * n_candidates
        for t in range(rest):
            words[t] = words[4 * n_candidates + t]
        carried = rest
        first = 0
        _regenerate(key)
        _temper_into(key, 0, words, carried)
        available = carried + _N


def _mt_state(rs: np.random.RandomState):
    """(key copy, pos, has_gauss, gauss) of an MT19937 RandomState, or None for another generator."""
    state = rs.get_state(legacy=False)
    if state["bit_generator"] != "MT19937":
        return None
    return (np.array(state["state"]["key"], dtype=np.uint32), int(state["state"]["pos"]),
            bool(state["has_gauss"]), float(state["gauss"]))


#: Whether the in-place view of NumPy's MT19937 state matched its ``state`` property (checked
#: at first use; None = not checked yet).
_view_matches: list = [None]


def _state_view(rs: np.random.RandomState) -> np.ndarray | None:
    """A writable uint32 view of ``rs``'s MT19937 state in place: ``key[0:624]``, then ``pos``.

    Reading and writing the state through ``get_state``/``set_state`` copies the 624 words one
    by one (about 40 us each way, which a small draw notices); NumPy's C struct
    ``mt19937_state {uint32 key[624]; int pos;}`` is reachable through the bit generator's
    ctypes interface. None when ``rs`` is not on MT19937 or the layout does not check out
    (compared once with the ``state`` property); callers then go through get/set_state.
    """
    bitgen = getattr(rs, "_bit_generator", None)
    if _view_matches[0] is False or not isinstance(bitgen, np.random.MT19937):
        return None
    try:
        address = bitgen.ctypes.state_address
    except AttributeError:  # pragma: no cover - very old NumPy
        _view_matches[0] = False
        return None
    view = np.ctypeslib.as_array((ctypes.c_uint32 * (_N + 1)).from_address(address))
    if _view_matches[0] is None:
        state = bitgen.state["state"]
        _view_matches[0] = bool(np.array_equal(view[:_N], state["key"]) and int(view[_N]) == int(state["pos"]))
        if not _view_matches[0]:  # pragma: no cover - a NumPy with another layout
            return None
    return view


def _run_in_place(rs: np.random.RandomState, draw) -> bool:
    """Call ``draw(key, pos) -> new pos`` on ``rs``'s state in place (under the bit generator's
    lock); False, without calling, when only get/set_state can reach the state."""
    view = _state_view(rs)
    if view is None:
        return False
    with rs._bit_generator.lock:
        view[_N] = draw(view[:_N], int(view[_N]))
    return True


def normal(rs: np.random.RandomState, shape: tuple[int, ...], loc: float = 0.0, scale: float = 1.0) -> np.ndarray:
    """``rs.normal(loc, scale, size=shape)``: the same values, and ``rs`` advanced the same way."""
    out = np.empty(int(np.prod(shape)), np.float64)
    view = _state_view(rs)
    if view is not None:
        # The cached Gaussian lives outside the bit generator: read through get_state, and
        # written back only when the draw changes it.
        _, _, _, has_gauss, gauss = rs.get_state(legacy=True)
        with rs._bit_generator.lock:
            pos, new_has, new_gauss = _gauss_fill(out, float(loc), float(scale), view[:_N], int(view[_N]),
                                                  bool(has_gauss), float(gauss))
            view[_N] = pos
        if (bool(new_has), float(new_gauss)) != (bool(has_gauss), float(gauss)):
            rs.set_state(("MT19937", np.array(view[:_N]), pos, int(new_has), new_gauss))
        return out.reshape(shape)
    state = _mt_state(rs)
    if state is None:
        return rs.normal(loc, scale, size=shape)
    key, pos, has_gauss, gauss = state
    pos, has_gauss, gauss = _gauss_fill(out, float(loc), float(scale), key, pos, has_gauss, gauss)
    rs.set_state(("MT19937", key, pos, int(has_gauss), gauss))
    return out.reshape(shape)


def randint(rs: np.random.RandomState, low: int, high: int, shape: tuple[int, ...]) -> np.ndarray:
    """``rs.randint(low, high, size=shape)`` (int64): the same values, ``rs`` advanced the same way.

    NumPy's legacy masked rejection for ranges below 2**32 values (one 32-bit word per try);
    wider ranges, and generators other than MT19937, are served by NumPy itself.
    """
    low, high = int(low), int(high)
    if high <= low:
        raise ValueError(f"randint needs low < high; got {low}, {high}")
    span = high - 1 - low
    if span >= 0xFFFFFFFF or not isinstance(getattr(rs, "_bit_generator", None), np.random.MT19937):
        return rs.randint(low, high, size=shape)
    out = np.empty(int(np.prod(shape)), np.int64)
    if span == 0:  # NumPy draws nothing for a single value
        out[:] = low
        return out.reshape(shape)
    mask = (1 << span.bit_length()) - 1
    if not _run_in_place(rs, lambda key, pos: _masked_fill(out, low, span, mask, key, pos)):
        key, pos, has_gauss, gauss = _mt_state(rs)
        pos = _masked_fill(out, low, span, mask, key, pos)
        rs.set_state(("MT19937", key, pos, int(has_gauss), gauss))
    return out.reshape(shape)


def uniform(rs: np.random.RandomState, shape: tuple[int, ...], low: float | None = None,
            high: float | None = None) -> np.ndarray:
    """``rs.random_sample(shape)``, or ``rs.uniform(low, high, size=shape)`` when ``low`` and
    ``high`` are given: the same float64 values, and ``rs`` advanced the same way."""
    scaled = low is not None or high is not None
    if scaled:
        low, high = float(0.0 if low is None else low), float(1.0 if high is None else high)
        span = high - low  # NumPy's range, then low + range * double
        if not np.isfinite(span):
            raise OverflowError(f"uniform range {low}..{high} is not finite")
    if not isinstance(getattr(rs, "_bit_generator", None), np.random.MT19937):
        return rs.uniform(low, high, size=shape) if scaled else rs.random_sample(shape)
    out = np.empty(int(np.prod(shape)), np.float64)
    args = (low, span) if scaled else (0.0, 1.0)
    if not _run_in_place(rs, lambda key, pos: _uniform_fill(out, *args, scaled, key, pos)):
        key, pos, has_gauss, gauss = _mt_state(rs)
        pos = _uniform_fill(out, *args, scaled, key, pos)
        rs.set_state(("MT19937", key, pos, int(has_gauss), gauss))
    return out.reshape(shape)


def poisson_levels(rs: np.random.RandomState, levels: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``rs.poisson(lam[levels])``: the same counts, and ``rs`` advanced the same way.

    Parameters
    ----------
    rs : np.random.RandomState
        Its state advances by exactly the draws NumPy would make.
    levels : np.ndarray
        Integer array (e.g. a uint8 image) indexing ``lam``; any shape.
    lam : np.ndarray
        float64 rates, non-negative and finite.

    Returns
    -------
    np.ndarray
        int64 counts of ``levels``' shape.
    """
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    levels = np.asarray(levels)
    if not (levels.dtype == np.uint8 and lam.shape[0] >= 256) and levels.size \
            and (levels.min() < 0 or levels.max() >= lam.shape[0]):
        raise IndexError(f"levels must index the {lam.shape[0]} rates; got values "
                         f"{levels.min()}..{levels.max()}")
    if not isinstance(getattr(rs, "_bit_generator", None), np.random.MT19937):
        return rs.poisson(lam[levels])
    flat = np.ascontiguousarray(levels).reshape(-1)
    result = []

    def draw(key, pos):
        counts, pos = _draw(flat, lam, key, pos, _LOGGAM_COEF)
        result.append(counts)
        return pos

    if not _run_in_place(rs, draw):
        key, pos, has_gauss, gauss = _mt_state(rs)
        pos = draw(key, pos)
        rs.set_state(("MT19937", key, pos, int(has_gauss), gauss))
    return result[0].reshape(levels.shape)
