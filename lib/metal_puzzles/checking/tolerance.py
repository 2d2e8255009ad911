"""How close a kernel's float32 output must come to its spec: what float32 arithmetic can promise
for the puzzle's computation, element by element, instead of one fixed tolerance.

The spec is evaluated in float64 (the reference), and each element gets an allowed error:

- ``ErrorModel.EXACT_SUMS``: outputs are sums of products of the float inputs with non-negative
  coefficients (maps, sums, dot products, convolutions, scans, matmuls, gathers, scatters, sparse
  products). A test whose float inputs lie on a grid of ``2**-k`` and whose largest absolute
  partial result fits in float32's 24-bit significand on the products' grid is computed *exactly*
  by float32 in any order, with or without ``fma``: the kernel must agree with the reference to
  the puzzle's floor. Otherwise (values off the grid), the classic bound for any summation order
  applies: ``gamma(N + d) * spec(|x|)``, with ``N`` the largest float input's size (no reduction is
  longer) and ``d`` the number of float inputs (the products' degree).
- ``ErrorModel.CONDITIONED``: nonlinear computations (normalisations, softmax, iterated maps). A
  backward-stable float32 algorithm computes the exact result of inputs perturbed by about
  ``gamma(n)`` relative, so its forward error is at most ``gamma(n)`` times the spec's componentwise
  condition ``sum_i |d out_j / d x_i| * |x_i|``, which MLX's autodiff gives in float64; ``n`` is the
  number of inputs the element depends on. A safety factor covers the algorithms' extra roundings
  (each output element's own, the mean's division, ``rsqrt``'s few ulps).
- ``ErrorModel.FIXED``: the spec evaluated as written (float32), within fixed ``atol``/``rtol``:
  a learner's own ``MetalProblem`` whose spec the package knows nothing about.

A puzzle may add an ``Allowance``: an error its spec's float inputs cannot show, so no model sees it.
RoPE's angle ``p * BASE^(-2i/D)`` is computed in float32 from an integer position ``p``: its
roundings grow with the position, and the pair's outputs move with the angle (``puzzles.part5.rope``).

Every model keeps the puzzle's ``atol``/``rtol`` as a floor. A wrong kernel still fails: the
allowed error of exact sums is the floor, and a one-pass variance near 1000 is off by far more
than the conditioned bound (tests/checking/test_fairness.py, benchmarks/bench_seed_sweep.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import mlx.core as mx
import numpy as np

#: An error the spec's float inputs cannot show (each output element's, from a test's inputs), added
#: to what the error model allows: RoPE's float32 angles, which grow with an integer position.
Allowance = Callable[[tuple[np.ndarray, ...]], np.ndarray]

#: What an output stored narrower than float32 may be off by, relative: 2**-10 for half (11
#: significant bits), 2**-7 for bfloat16 (8), an ulp at the bottom of a binade, almost two at its
#: top. Rounding to nearest costs half an ulp; a float32 result a few of its own ulps off that lands
#: across a rounding midpoint rounds to the neighbour, so a correct kernel is within one ulp.
STORED_ROUNDOFF = {"float16": 2.0**-10, "bfloat16": 2.0**-7}

#: float32's unit roundoff.
U32 = 2.0**-24
#: Bits of float32's significand.
SIGNIFICAND_BITS = 24
#: The finest grid test values are checked against (2**-GRID_BITS).
GRID_BITS = 8
#: How much a conditioned bound allows beyond gamma(n) times the condition (see the module's docstring).
CONDITIONED_SAFETY = 1.0
#: Output elements whose Jacobian rows are computed at once (bounds the memory a check needs).
_JACOBIAN_ROWS = 256
#: Roundings an output element may take after its reductions (a division, rsqrt, the final
#: multiply-add), in units of U32 relative to the element.
OWN_ROUNDINGS = 8


class ErrorModel(str, Enum):
    EXACT_SUMS = "exact sums"
    CONDITIONED = "conditioned"
    FIXED = "fixed"


def gamma(n: int | np.ndarray) -> np.ndarray:
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n float32 roundings."""
    nu = np.asarray(n, dtype=np.float64) * U32
    return nu / (1.0 - nu)


@dataclass(frozen=True)
class Tolerance:
    """How close one test's output had to come, as a verdict states it: the error model and the
    floor a puzzle declares (``Puzzle.error_model``, ``atol``, ``rtol``), and what the model made
    of this test. The numbers at each element are the ``Comparison``'s ``allowed``."""

    model: ErrorModel
    atol: float
    rtol: float
    #: For exact sums: whether this test's values let float32 compute the result exactly.
    exact: bool = False
    #: For exact sums float32 cannot compute exactly: the n of the bound gamma(n) * spec(|x|).
    roundings: int | None = None
    #: Whether the puzzle adds an allowance of its own (``Puzzle.allowance``: what its error model
    #: cannot see, such as V.2's float32 angles).
    allowance: bool = False
    #: The narrower float the output is stored in (half, bfloat16), allowed its one rounding.
    stored_as: str | None = None

    def describe(self) -> str:
        """The rule in one sentence, for a verdict: '|yours - spec| may be at most ...'."""
        extras = ([" plus the puzzle's own allowance (its text says for what)"]
                  if self.allowance else [])
        if self.stored_as is not None:
            extras.append(f" plus one rounding of the output to {self.stored_as}")
        rule = self._describe_model()
        return rule[:-1] + "".join(extras) + "." if extras else rule

    def _describe_model(self) -> str:
        floor = f"atol {self.atol:g} + rtol {self.rtol:g} * |spec|"
        if self.model is ErrorModel.FIXED:
            return (f"|yours - spec| may be at most {floor} (a fixed tolerance, with no model of how float32 "
                    "rounding affects this computation).")
        source = f"(the puzzle's error model, '{self.model.value}', and its atol and rtol)"
        if self.model is ErrorModel.EXACT_SUMS and self.exact:
            return (f"|yours - spec| may be at most {floor} {source}: on this test float32 computes these sums of "
                    "products exactly, in any order, so a larger difference is a wrong value, not rounding.")
        if self.model is ErrorModel.EXACT_SUMS:
            n = self.roundings if self.roundings is not None else "n"
            return (f"|yours - spec| may be at most float32's bound for these sums in any order, gamma({n}) * "
                    f"spec(|inputs|) with gamma(n) = n * 2**-24, plus {floor} {source}.")
        return (f"|yours - spec| may be at most what float32 rounding can do to this computation at each position, "
                f"gamma(n + {OWN_ROUNDINGS}) times the spec's condition number there (n: the inputs the position "
                f"depends on; gamma(n) = n * 2**-24) plus {OWN_ROUNDINGS} roundings of the value, plus {floor} "
                f"{source}.")


@dataclass(frozen=True)
class Comparison:
    """The reference output of one test and the error allowed at each of its elements."""

    expected: np.ndarray  # float64, shaped as the output
    allowed: np.ndarray  # float64 >= 0, same shape (or broadcastable)
    model: ErrorModel
    #: For exact sums: whether the test's values let float32 compute the result exactly.
    exact: bool = False
    #: The rule ``allowed`` follows, for the verdict to state.
    tolerance: Tolerance | None = None

    def mismatch(self, yours: np.ndarray) -> np.ndarray:
        """Where ``yours`` is further from the reference than allowed (NaN matches NaN)."""
        return mismatch(yours, self.expected, self.allowed)


def mismatch(yours: np.ndarray, expected: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    y = np.asarray(yours, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(y - e) <= allowed) | (y == e)  # y == e: infinities of the same sign
    return ~(ok | (np.isnan(y) & np.isnan(e)))


def compare_with_spec(spec: Callable, inputs: tuple[np.ndarray, ...], output_shape: tuple[int, ...],
                      model: ErrorModel, atol: float, rtol: float, allowance: Allowance | None = None,
                      output_dtype: str | None = None, condition: Condition | None = None) -> Comparison:
    """The reference output for ``inputs`` and the error allowed at each element (cached: every
    student of a class, and every check of a session, meets the same tests); ``allowance`` adds
    the puzzle's own error that the model cannot see. An output stored in a narrower float than
    float32 (``output_dtype`` half or bfloat16, as MLX's kernels write half activations after
    computing in float32) is allowed its one rounding to that type besides. ``condition``: the
    spec's condition in closed form (``Puzzle.condition``), for the conditioned model."""
    key = (*_key(spec, inputs, output_shape, model, atol, rtol), allowance, output_dtype, condition)
    found = _CACHE.get(key)
    if found is not None:
        _CACHE.move_to_end(key)
        return found
    # In float64 on the CPU: MLX has no float64 on a GPU ("float64 is not supported on the GPU"),
    # and where MLX's default device is one (Metal on a Mac, CUDA on an NVIDIA machine) the spec,
    # its Jacobian and the reference would otherwise run there.
    with mx.stream(mx.cpu):
        comparison = _compare(spec, inputs, output_shape, model, atol, rtol, condition)
    if allowance is not None:
        extra = np.broadcast_to(np.asarray(allowance(inputs), dtype=np.float64), comparison.expected.shape)
        # The rule keeps its model and says what was added (it read 'a fixed tolerance' without it).
        comparison = dataclasses.replace(comparison, allowed=comparison.allowed + extra,
                                         tolerance=_with(comparison.tolerance, allowance=True))
    stored = STORED_ROUNDOFF.get(str(output_dtype))
    if stored is not None:
        comparison = dataclasses.replace(comparison, allowed=comparison.allowed + stored * np.abs(comparison.expected),
                                         tolerance=_with(comparison.tolerance, stored_as=str(output_dtype)))
    _CACHE[key] = comparison
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return comparison


def _with(rule: Tolerance | None, **changes) -> Tolerance | None:
    return None if rule is None else dataclasses.replace(rule, **changes)


_CACHE: OrderedDict[tuple, Comparison] = OrderedDict()
#: Enough for every comparison of a whole check of the finale (about 25 a decoded token), so a
#: second check finds them all.
_CACHE_SIZE = 2048


def _key(spec, inputs, output_shape, model, atol, rtol) -> tuple:
    h = hashlib.blake2b(digest_size=16)
    for x in inputs:
        a = np.ascontiguousarray(x)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return (getattr(spec, "__module__", ""), getattr(spec, "__qualname__", repr(spec)), id(spec), h.digest(),
            tuple(output_shape), model, atol, rtol)


def _compare(spec, inputs, output_shape, model, atol, rtol, closed_form: Condition | None = None) -> Comparison:
    rule = Tolerance(model, atol, rtol)
    if model is ErrorModel.FIXED:
        expected = _shaped(_evaluate(spec, inputs), output_shape)
        return Comparison(expected, atol + rtol * np.abs(expected), model, tolerance=rule)
    wide = tuple(_as_float64(x) for x in inputs)
    expected = _shaped(_evaluate(spec, wide), output_shape)
    floor = atol + rtol * np.abs(expected)
    if model is ErrorModel.EXACT_SUMS:
        magnitude = _shaped(_evaluate(spec, tuple(np.abs(x) if _is_float(x) else x for x in wide)), output_shape)
        if _exact_in_float32(inputs, magnitude):
            return Comparison(expected, floor, model, exact=True, tolerance=dataclasses.replace(rule, exact=True))
        floats = [x for x in inputs if _is_float(x)]
        longest = max((x.size for x in floats), default=1)
        return Comparison(expected, floor + gamma(longest + len(floats)) * np.abs(magnitude), model,
                          tolerance=dataclasses.replace(rule, roundings=longest + len(floats)))
    if closed_form is not None:
        found, depends_on = closed_form(*wide)
        return _conditioned(expected, np.reshape(found, output_shape), np.reshape(depends_on, output_shape), rule)
    condition, depends_on = _condition(spec, wide, output_shape)
    return _conditioned(expected, condition, depends_on, rule)


def _conditioned(expected: np.ndarray, condition: np.ndarray, depends_on: np.ndarray, rule: Tolerance) -> Comparison:
    """The conditioned model's comparison, from the spec's condition number at each position."""
    allowed = rule.atol + rule.rtol * np.abs(expected) \
        + CONDITIONED_SAFETY * gamma(depends_on + OWN_ROUNDINGS) * condition + OWN_ROUNDINGS * U32 * np.abs(expected)
    return Comparison(expected, allowed, ErrorModel.CONDITIONED, tolerance=rule)


#: A spec's condition in closed form: (the float64 inputs) -> (sum_i |d out / d x_i| |x_i|, the
#: number of nonzero partial derivatives), each shaped as the output.
Condition = Callable[..., tuple[np.ndarray, np.ndarray]]


def compare_conditioned(spec: Callable, inputs: tuple[np.ndarray, ...], output_shape: tuple[int, ...],
                        atol: float, rtol: float, condition: Condition) -> Comparison:
    """The conditioned error model with the spec's condition given in closed form: the same
    allowance as ``compare_with_spec``'s autodiff, for specs whose Jacobian is too large to build
    (attention over thousands of keys: every output depends on every key and value of its head)."""
    wide = tuple(_as_float64(x) for x in inputs)
    with mx.stream(mx.cpu):  # float64, which MLX has on no GPU (as in compare_with_spec)
        expected = _shaped(_evaluate(spec, wide), output_shape)
        found, depends_on = condition(*wide)
    return _conditioned(expected, np.reshape(found, output_shape), np.reshape(depends_on, output_shape),
                        Tolerance(ErrorModel.CONDITIONED, atol, rtol))


def _exact_in_float32(inputs: tuple[np.ndarray, ...], magnitude: np.ndarray) -> bool:
    """Whether float32 computes these sums of products exactly in any order: every float input on
    a grid of 2**-k, and every partial result (at most ``magnitude`` in absolute value, on the
    products' grid of 2**-(k * degree)) within the significand."""
    floats = [np.asarray(x, dtype=np.float64) for x in inputs if _is_float(x)]
    if not floats:
        return True
    grids = [_grid_bits(x) for x in floats]
    known = [bits for bits in grids if bits is not None]
    if len(known) < len(grids):
        return False
    fraction_bits = max(known) * len(floats)
    largest = float(np.max(np.abs(magnitude))) if np.size(magnitude) else 0.0
    return largest * 2.0**fraction_bits < 2.0**SIGNIFICAND_BITS


def _grid_bits(x: np.ndarray) -> int | None:
    """The smallest k with every value a multiple of 2**-k (None when k > GRID_BITS)."""
    for k in range(GRID_BITS + 1):
        scaled = x * 2.0**k
        if np.all(np.isfinite(scaled)) and np.all(scaled == np.round(scaled)):
            return k
    return None


def _condition(spec, inputs, output_shape) -> tuple[np.ndarray, np.ndarray]:
    """Per output element: sum_i |d out / d x_i| |x_i| over the float inputs, and how many inputs
    it depends on (the nonzero partial derivatives), by reverse-mode autodiff in float64."""
    positions = [i for i, x in enumerate(inputs) if _is_float(x)]
    primals = [_to_mlx(inputs[i]) for i in positions]

    def of_floats(*floats):
        args = [_to_mlx(x) for x in inputs]
        for i, v in zip(positions, floats, strict=True):
            args[i] = v
        return spec(*args)

    out = of_floats(*primals)
    size = out.size

    def row(cotangent):
        return mx.vjp(of_floats, primals, [cotangent])[1]

    batched = mx.vmap(row)

    def rows_of(cotangents):
        try:
            return batched(cotangents)
        except RuntimeError as err:
            # MLX has no vmap for some operations (QuantizedMatmul::vmap is NYI in MLX 0.32, and the
            # gated MLP's spec is mx.quantized_matmul): then the rows one at a time, the same numbers.
            if "vmap" not in str(err):
                raise
            rows = [row(c) for c in cotangents]
            return [mx.stack([r[i] for r in rows]) for i in range(len(primals))]
    magnitudes = [np.abs(np.asarray(x, dtype=np.float64).reshape(-1)) for x in primals]
    condition = np.zeros(size)
    depends_on = np.zeros(size)
    # The Jacobian a block of output elements at a time: memory stays small for long rows.
    for start in range(0, size, _JACOBIAN_ROWS):
        stop = min(size, start + _JACOBIAN_ROWS)
        basis = np.zeros((stop - start, size))
        basis[np.arange(stop - start), np.arange(start, stop)] = 1.0
        blocks = rows_of(mx.array(basis).reshape((stop - start, *out.shape)))
        for jac, magnitude in zip(blocks, magnitudes, strict=True):
            j = np.abs(np.asarray(jac, dtype=np.float64).reshape(stop - start, -1))
            condition[start:stop] += j @ magnitude
            depends_on[start:stop] += (j > 0).sum(axis=1)
    return condition.reshape(output_shape), depends_on.reshape(output_shape)


def spec_in_float64(spec: Callable, inputs: tuple[np.ndarray, ...], output_shape: tuple[int, ...]) -> np.ndarray:
    """The spec of ``inputs`` in float64, shaped as the output: the reference a comparison uses."""
    return _shaped(_evaluate(spec, tuple(_as_float64(x) for x in inputs)), output_shape)


def _evaluate(spec, inputs) -> np.ndarray:
    return np.asarray(spec(*[_to_mlx(x) for x in inputs]), dtype=np.float64)


def _to_mlx(x) -> mx.array:
    # mx.array() makes float32 of a float64 NumPy array unless told otherwise.
    a = np.asarray(x)
    return mx.array(a, dtype=mx.float64) if a.dtype == np.float64 else mx.array(a)


def _shaped(out: np.ndarray, output_shape: tuple[int, ...]) -> np.ndarray:
    return out.reshape(output_shape) if out.size == int(np.prod(output_shape)) else out


def _is_float(x) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.floating)


def _as_float64(x) -> np.ndarray:
    a = np.asarray(x)
    return a.astype(np.float64) if _is_float(a) else a
