"""What the pattern of a wrong output's errors says about its cause, where it says something.

A few patterns point at one kind of mistake whatever the puzzle:

- NaN or infinity where the spec is finite: a float overflowed or divided by zero (``exp`` of an
  attention score in the hundreds without the maximum subtracted first; ``0 / 0`` without EPS);
- the spec's values in another order: a layout (rows for columns, another pairing) or a tie rule;
  moved a place or two along the output: an index off by one;
- one ratio yours / spec at every differing position: a constant left out or changed; when that
  ratio is the square root of a size of the problem, a missing 1/sqrt(D) scale, when it is the size
  itself, a sum where a mean was meant;
- the same ratio within each row, another in each: something computed once a row (its norm);
- an error that grows with the position along an axis: an angle or an offset that grows with it;
- every other index along an axis wrong, the ones between right: something that should step by one
  steps by two, such as a position kept in half (V.2's rotary embeddings at positions past 2048);
- yours is the spec of an input scaled by the square root of a size (``scaled_input``, which
  evaluates the spec again): a scale such as attention's 1/sqrt(D) left out inside the
  computation, where no one ratio of the outputs shows it (a softmax of unscaled scores).

Each test looks at every differing position, not at the first few; none claims more than it sees.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

#: How far apart ratios may be and still be called one (relative).
SAME_RATIO = 1e-3
#: How well (Spearman's rank correlation) an error must follow a position to grow with it.
GROWTH_CORRELATION = 0.9
#: How much larger the error must be over the last quarter of the positions than over the first
#: (on average), to be said to grow: an error proportional to the position is 7 times larger.
GROWTH_FACTOR = 4.0


def likely_cause(yours: np.ndarray, expected: np.ndarray, mismatch: np.ndarray, allowed: np.ndarray | None,
                 sizes: Iterable[int] = ()) -> str | None:
    """The likely cause of a wrong float output, as a sentence, or None when the errors show no
    pattern. ``sizes``: the sizes of the problem (its inputs' and output's axes), for ratios
    that are a size or its square root."""
    if yours.dtype.kind != "f" or yours.shape != expected.shape or not mismatch.any():
        return None
    y = yours.astype(np.float64)
    e = np.asarray(expected, dtype=np.float64)
    for cause in (_not_finite(y, e, mismatch), _reordered(y, e, mismatch, allowed),
                  _one_ratio(y, e, mismatch, sorted({int(s) for s in sizes if int(s) > 1})),
                  _every_other(mismatch), _grows_with_position(y, e, mismatch, allowed)):
        if cause is not None:
            return cause
    return None


def _not_finite(y: np.ndarray, e: np.ndarray, mismatch: np.ndarray) -> str | None:
    bad = mismatch & ~np.isfinite(y) & np.isfinite(e)
    if not bad.any():
        return None
    what = "NaN" if np.isnan(y[bad]).all() else "infinity" if np.isinf(y[bad]).all() else "NaN or infinity"
    return (f"your output holds {what} at {int(bad.sum())} position{'s' if bad.sum() > 1 else ''} where the spec's "
            "is finite: a float overflowed or divided by zero. exp() of a value in the hundreds is infinite in float32 "
            "(a softmax must subtract the row's maximum before exp), and 0 / 0 is NaN (a norm without its EPS).")


def _reordered(y: np.ndarray, e: np.ndarray, mismatch: np.ndarray, allowed: np.ndarray | None) -> str | None:
    """The spec's values, in another order: over the whole output, or within each row."""
    if not (np.isfinite(y).all() and np.isfinite(e).all()):
        return None
    slack = float(np.max(allowed)) if allowed is not None and np.size(allowed) else 0.0
    layouts = [("", y.reshape(1, -1), e.reshape(1, -1))]
    if y.ndim >= 2:
        layouts.append((" within each row", y.reshape(-1, y.shape[-1]), e.reshape(-1, y.shape[-1])))
    for where, ys, es in layouts:
        if np.all(np.abs(np.sort(ys, axis=1) - np.sort(es, axis=1)) <= slack):
            return (f"your output holds the spec's values{where}, in another order: a layout mistake (rows for "
                    "columns, the wrong stride, another pairing of elements) or, where values tie, another tie rule.")
    for where, ys, es in reversed(layouts):
        for shift in (1, -1, 2, -2):
            if ys.shape[1] > 2 * abs(shift) + 1 and _shifted(ys, es, shift, slack):
                way = "later" if shift > 0 else "earlier"
                return (f"your output holds the spec's values{where} {abs(shift)} position{'s' if abs(shift) > 1 else ''} "
                        f"{way} than the spec has them: an index off by {abs(shift)} (a missing or extra + 1, a loop "
                        "bound or a start one step off).")
    return None


def _shifted(ys: np.ndarray, es: np.ndarray, shift: int, slack: float) -> bool:
    """Whether every row of ``ys`` is the row of ``es`` moved ``shift`` places along it, where both
    are defined (yours[k + shift] is spec[k])."""
    n = ys.shape[1]
    mine = ys[:, shift:] if shift > 0 else ys[:, :n + shift]
    theirs = es[:, :n - shift] if shift > 0 else es[:, -shift:]
    # A constant row matches itself moved: that says nothing about an index.
    return bool(np.all(np.abs(mine - theirs) <= slack)) and float(np.max(np.ptp(theirs, axis=1))) > slack


def _one_ratio(y: np.ndarray, e: np.ndarray, mismatch: np.ndarray, sizes: list[int]) -> str | None:
    """One ratio yours / spec at every differing position (or one per row)."""
    use = mismatch & (e != 0) & np.isfinite(y)
    if use.sum() < 2:
        return None
    ratio = y[use] / e[use]
    if _one(ratio):
        q = float(np.median(ratio))
        size = _named_size(q, sizes)
        if size is not None:
            return size
        return (f"yours is the spec's times {q:.6g} at every differing position (a relative error of {q - 1:+.3g} "
                "everywhere): a constant left out or changed, such as EPS in a normalisation, or a scale.")
    if y.ndim >= 2:
        rows_y, rows_e, rows_m = (a.reshape(-1, a.shape[-1]) for a in (y, e, use))
        ratios = []
        for r in range(rows_y.shape[0]):
            if rows_m[r].sum() >= 2:
                q_row = rows_y[r][rows_m[r]] / rows_e[r][rows_m[r]]
                if not _one(q_row):
                    return None
                ratios.append((r, float(np.median(q_row))))
        if len(ratios) >= 1 and rows_m.sum() == sum(int(rows_m[r].sum()) for r, _ in ratios):
            shown = ", ".join(f"row {r}: {q:.6g}" for r, q in ratios[:3])
            return (f"within each row that differs, yours is the spec's times one factor ({shown}): something "
                    "computed once a row is off, such as the row's norm (an EPS left out) or its maximum or sum.")
    return None


def _one(ratio: np.ndarray) -> bool:
    q = float(np.median(ratio))
    return q != 0 and abs(q - 1) > SAME_RATIO and float(np.max(np.abs(ratio - q))) <= SAME_RATIO * abs(q)


def _named_size(q: float, sizes: list[int]) -> str | None:
    for size in sizes:
        root = math.sqrt(size)
        for factor, what in ((root, f"sqrt({size}) = {root:.4g}"), (1 / root, f"1/sqrt({size}) = {1 / root:.4g}")):
            if abs(q - factor) <= SAME_RATIO * factor:
                return (f"yours is the spec's times {q:.4g} everywhere it differs, which is {what}, {size} being a size "
                        f"of this problem: a scale such as 1/sqrt(D) left out, or applied twice.")
        for factor, what in ((size, f"{size}"), (1 / size, f"1/{size}")):
            if abs(q - factor) <= SAME_RATIO * factor:
                return (f"yours is the spec's times {q:.4g} everywhere it differs, which is {what}, {size} being a size "
                        "of this problem: a sum where a mean was meant (or the reverse), or a count applied twice.")
    return None


def _every_other(mismatch: np.ndarray) -> str | None:
    """Exactly the odd (or the even) indices along one axis differ, every one of them, and the
    indices between match everywhere."""
    for axis in range(mismatch.ndim):
        n = mismatch.shape[axis]
        if n < 4:
            continue
        others = tuple(a for a in range(mismatch.ndim) if a != axis)
        differs = mismatch.any(axis=others) if others else mismatch
        for parity, which in ((1, "odd"), (0, "even")):
            if np.array_equal(differs, np.arange(n) % 2 == parity):
                return (f"only the {which} indices along axis {axis} differ, every one of them, and the indices between "
                        "match: something that should step by one along that axis steps by two. A position kept in "
                        "half does (from 2048 half holds only the even integers, from 4096 only multiples of 4), as "
                        "does an index doubled, halved or rounded to a pair.")
    return None


def _grows_with_position(y: np.ndarray, e: np.ndarray, mismatch: np.ndarray, allowed: np.ndarray | None
                         ) -> str | None:
    """The error, relative to the error allowed, growing along one axis (leading axes first)."""
    if not np.isfinite(y).all():
        return None
    error = np.abs(y - e)
    for axis in range(y.ndim):
        n = y.shape[axis]
        if n < 4:
            continue
        others = tuple(a for a in range(y.ndim) if a != axis)
        per = np.max(error, axis=others) if others else error
        if np.count_nonzero(per) < 3:
            continue
        rho = _spearman(np.arange(n), per)
        quarter = max(1, n // 4)
        start, end = float(np.mean(per[:quarter])), float(np.mean(per[-quarter:]))
        if rho >= GROWTH_CORRELATION and end > GROWTH_FACTOR * max(start, 1e-300):
            first = int(np.argmax(per > 0))
            return (f"the error grows with the position along axis {axis} (about {float(per[first]):.2g} at {first}, "
                    f"{float(per[-1]):.2g} at {n - 1}): something that grows with the position, such as a rotation's "
                    "angle or an offset, computed with too little precision (a position in half, a float32 angle "
                    "formed the long way) or with the wrong frequency.")
    return None


def _spearman(x: np.ndarray, v: np.ndarray) -> float:
    rx = np.argsort(np.argsort(x)).astype(np.float64)
    rv = np.argsort(np.argsort(v, kind="stable"), kind="stable").astype(np.float64)
    if np.std(rv) == 0:
        return 0.0
    return float(np.corrcoef(rx, rv)[0, 1])


#: How much closer yours must come to the spec of a scaled input than to the spec, and how near
#: it (in units of the error allowed) to be said to be that.
SCALED_CLOSER = 100.0
SCALED_WITHIN = 10.0
#: The spec is evaluated at most this many times (inputs x sizes x two ways): a wrong kernel's
#: check, which the grader runs for a whole class, must not pay more than a few evaluations.
SCALED_TRIES = 24
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def scaled_input(yours: np.ndarray, expected: np.ndarray, allowed: np.ndarray, inputs: Sequence[np.ndarray],
                 evaluate: Callable[[tuple[np.ndarray, ...]], np.ndarray], sizes: Iterable[int]) -> str | None:
    """Whether yours is the spec evaluated with one float input multiplied by the square root of a
    size of the problem, or divided by it: ``evaluate`` gives the spec (float64) of other inputs."""
    if yours.dtype.kind != "f" or yours.shape != expected.shape or not np.isfinite(yours).all():
        return None
    y = yours.astype(np.float64)
    bound = np.maximum(np.broadcast_to(allowed, y.shape), np.finfo(np.float64).tiny)
    with np.errstate(over="ignore", invalid="ignore"):  # outputs near float64's largest: inf is 'far off'
        off = float(np.max(np.abs(y - expected) / bound))
    if off <= 1:
        return None
    tries = [(k, x, size, factor, what) for k, x in enumerate(inputs)
             if np.issubdtype(np.asarray(x).dtype, np.floating) and np.ndim(x) > 0
             for size in sorted({int(n) for n in sizes if int(n) > 3})
             for factor, what in ((math.sqrt(size), f"multiplied by sqrt({size}) = {math.sqrt(size):.4g}"),
                                  (1 / math.sqrt(size), f"divided by sqrt({size}) = {math.sqrt(size):.4g}"))]
    for k, x, size, factor, what in tries[:SCALED_TRIES]:
        scaled = list(inputs)
        scaled[k] = np.asarray(x, dtype=np.float64) * factor
        try:
            other = np.asarray(evaluate(tuple(scaled)), dtype=np.float64).reshape(y.shape)
        except Exception:  # a spec that refuses other inputs shows no such cause
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            near = float(np.max(np.abs(y - other) / bound))
        if near <= SCALED_WITHIN and near * SCALED_CLOSER <= off:
            which = _ORDINALS[k] if k < len(_ORDINALS) else f"input {k}"
            return (f"yours is what the spec gives with its {which} input {what} ({size} being a size of "
                    "this problem): a scale such as attention's 1/sqrt(D) left out (or applied twice) "
                    "where that input is used.")
    return None
