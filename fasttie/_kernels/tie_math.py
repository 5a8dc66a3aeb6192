"""Numerically stable primitives of the closed forms (docs/ties.md, section 7).

* ``harmonic_diff(t, j)`` = H(t+j) - H(t) with relative accuracy at any depth t;
* ``shifted_harmonic(t, j)`` = sum_{p=1..j} (p-1)/(t+p), kept apart from the harmonic part so
  the AP kernel never subtracts two large, nearly equal numbers;
* ``hypergeometric_mode_walk``: the pmf of a hypergeometric count by ratio recurrences from the
  mode outwards, normalised by the kept mass (log-gamma differences lose digits at 1e6 items).
"""

import math

import numpy as np

from ._jit import jit

_DIRECT = 32  # below this many terms, sum directly


@jit
def harmonic_diff(t, j):
    """sum_{p=1..j} 1 / (t + p) for integers t >= 0, j >= 0, relative error ~1e-16."""
    if j <= 0:
        return 0.0
    if j <= _DIRECT:
        s = 0.0
        for p in range(j, 0, -1):  # small terms first
            s += 1.0 / (t + p)
        return s
    head = 0.0
    if t < _DIRECT:
        # shift t above 32 so the asymptotic series of the digamma difference converges fast
        shift = _DIRECT - t
        for p in range(shift, 0, -1):
            head += 1.0 / (t + p)
        t = _DIRECT
        j -= shift
        if j <= _DIRECT:
            s = 0.0
            for p in range(j, 0, -1):
                s += 1.0 / (t + p)
            return head + s
    a = t + 1.0
    log_ratio = math.log1p(j / a)  # log(b / a), b = t + j + 1
    return head + log_ratio + _digamma_tail(a, log_ratio)


@jit
def _digamma_tail(a, log_ratio):
    """psi(b) - psi(a) - log(b/a) for b = a * exp(log_ratio), a >= 33 (asymptotic series).

    Each a^-m - b^-m is -expm1(-m log(b/a)) / a^m: no cancellation when b is close to a.
    """
    ia = 1.0 / a
    ia2 = ia * ia
    return (
        -math.expm1(-log_ratio) * ia / 2.0
        - math.expm1(-2.0 * log_ratio) * ia2 / 12.0
        + math.expm1(-4.0 * log_ratio) * ia2 * ia2 / 120.0
        - math.expm1(-6.0 * log_ratio) * ia2 * ia2 * ia2 / 252.0
        + math.expm1(-8.0 * log_ratio) * ia2 * ia2 * ia2 * ia2 / 240.0
        - math.expm1(-10.0 * log_ratio) * ia2 * ia2 * ia2 * ia2 * ia2 / 132.0
    )


@jit
def shifted_harmonic(t, j, dh):
    """sum_{p=1..j} (p - 1) / (t + p); ``dh`` must be harmonic_diff(t, j).

    Deep in the list (t >> j) the sum is about j^2 / (2t) while j and (t + 1) * dh are both
    about j: it is then computed as a (u - log1p(u)) minus the digamma tail, u = j / a, with
    u - log1p(u) by its series for small u, so no digits cancel.
    """
    if j <= _DIRECT:
        s = 0.0
        for p in range(j, 1, -1):
            s += (p - 1.0) / (t + p)
        return s
    if t < _DIRECT:
        return j - (t + 1.0) * dh
    a = t + 1.0
    u = j / a
    log_ratio = math.log1p(u)
    if u < 0.25:
        # u - log1p(u) = sum_{m>=2} (-1)^m u^m / m
        term = u * u
        excess = 0.0
        m = 2
        while True:
            piece = term / m
            excess += piece if m % 2 == 0 else -piece
            if piece < 1e-18 * excess:
                break
            term *= u
            m += 1
    else:
        excess = u - log_ratio
    return a * excess - a * _digamma_tail(a, log_ratio)


@jit
def hypergeometric_weights(n, r, j, weights):
    """Unnormalised pmf of X = relevant among j draws from a tie of n with r relevant.

    Fills ``weights[x - lo]`` for x in [lo, hi] and returns (lo, hi, total); terms below 1e-20
    of the mode are dropped (the pmf is log-concave, so the dropped tails are smaller still).
    ``weights`` must have room for min(r, j) + 1 entries.
    """
    x_min = max(0, j - (n - r))
    x_max = min(r, j)
    mode = ((j + 1) * (r + 1)) // (n + 2)
    mode = min(max(mode, x_min), x_max)
    cut = 1e-20
    weights[mode - x_min] = 1.0
    total = 1.0
    # upwards: P(x+1)/P(x) = (r-x)(j-x) / ((x+1)(n-r-j+x+1))
    w = 1.0
    hi = mode
    x = mode
    while x < x_max:
        w *= (r - x) * (j - x) / ((x + 1.0) * (n - r - j + x + 1.0))
        if w < cut:
            break
        x += 1
        weights[x - x_min] = w
        total += w
        hi = x
    # downwards: P(x-1)/P(x) = x(n-r-j+x) / ((r-x+1)(j-x+1))
    w = 1.0
    lo = mode
    x = mode
    while x > x_min:
        w *= x * (n - r - j + x) / ((r - x + 1.0) * (j - x + 1.0))
        if w < cut:
            break
        x -= 1
        weights[x - x_min] = w
        total += w
        lo = x
    return lo, hi, total, x_min


@jit
def first_relevant_rr(t, n, r, limit):
    """E[1/rank of the first relevant item] restricted to tie ranks p <= limit.

    The tie holds n items, r >= 1 of them relevant, after t earlier items. The first relevant
    item is at tie rank p with probability C(n-p, r-1)/C(n, r).
    """
    p_max = min(n - r + 1, limit)
    if p_max <= 0:
        return 0.0
    if r == 1:
        return harmonic_diff(t, p_max) / n
    w = r / n
    first = w / (t + 1.0)
    s = 0.0
    for p in range(1, p_max + 1):
        term = w / (t + p)
        s += term
        # w is non-increasing: what is left is at most w * (terms left) / (t + p)
        if term * (p_max - p) < 1e-18 * first:
            break
        w *= (n - p - r + 1.0) / (n - p)
    return s


def discount_prefix(n):
    """D[i] = sum_{l=1..i} 1 / log2(1 + l) for i = 0..n (float64, D[0] = 0)."""
    table = np.zeros(n + 1, dtype=np.float64)
    if n:
        table[1:] = np.cumsum(1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64)))
    return table
