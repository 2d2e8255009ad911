"""Metal's standard library functions as CUDA: one rule per builtin, keyed by the name the
simulator's library registers it under (``library.BUILTINS``). Every builtin has a rule or a
stated refusal (``missing_builtin_rules`` is empty, checked at import); a refused one is a
located error."""

from __future__ import annotations

from collections.abc import Callable

from ..front import ast
from ..lang.types import BOOL, ScalarType, Type, VectorType, scalar_of
from ..library import BUILTINS
from ..library.atomics import Atomic
from ..library.base import Elementwise
from ..library.simd import SimdReduce, SimdShuffle
from .render import Renderer, unsupported

Rule = Callable[[Renderer, ast.Call], str]

#: Elementwise builtins with a prelude function 'mp_<name>' of the same arguments.
_ELEMENTWISE_ALIASES = {"mad": "fma", "fmax3": "max3", "fmin3": "min3", "fmedian3": "median3", "abs": "abs",
                        "fabs": "fabs"}


def _args(r: Renderer, call: ast.Call) -> list[str]:
    return [r.expr(a) for a in call.args]


def elementwise(r: Renderer, call: ast.Call) -> str:
    name = BUILTINS_BY_CALL(call)
    fn = _ELEMENTWISE_ALIASES.get(name, name)
    return f"mp_{fn}({', '.join(_args(r, call))})"


def BUILTINS_BY_CALL(call: ast.Call) -> str:
    return call.target.name


def barrier(r: Renderer, call: ast.Call) -> str:
    if call.target.name == "simdgroup_barrier":
        r.uses_simd = True
        return "mp_simdgroup_barrier()"
    r.uses_barriers = True
    return "mp_threadgroup_barrier()"


_SHUFFLE_KINDS = {"shuffle": 0, "down": 1, "up": 2, "xor": 3, "rotate_down": 4, "rotate_up": 5, "broadcast": 6,
                  "broadcast_first": 7}


def shuffle(r: Renderer, call: ast.Call) -> str:
    b = call.target
    assert isinstance(b, SimdShuffle)
    r.uses_simd = True
    args = _args(r, call)
    k = args[1] if len(args) > 1 else "0u"
    return f"mp_simd_shuffle<{_SHUFFLE_KINDS[b.kind]}, {b.width}>({args[0]}, (unsigned)({k}))"


_REDUCE_OPS = {"sum": 0, "product": 1, "min": 2, "max": 3, "and": 4, "or": 5, "xor": 6, "all": 7, "any": 8}


def reduce(r: Renderer, call: ast.Call) -> str:
    b = call.target
    assert isinstance(b, SimdReduce)
    r.uses_simd = True
    scan = {None: 0, "inclusive": 1, "exclusive": 2}[b.scan]
    return f"mp_simd_reduce<{_REDUCE_OPS[b.op]}, {scan}, {b.width}>({r.expr(call.args[0])})"


def ballot(r: Renderer, call: ast.Call) -> str:
    r.uses_simd = True
    return f"mp_simd_ballot({r.expr(call.args[0])})"


def active_mask(r: Renderer, call: ast.Call) -> str:
    r.uses_simd = True
    return "mp_simd_active_threads_mask()"


def is_first(r: Renderer, call: ast.Call) -> str:
    r.uses_simd = True
    return "mp_simd_is_first()"


_ATOMIC_FUNCS = {"add": "mp_atomic_add", "sub": "mp_atomic_sub", "min": "mp_atomic_min", "max": "mp_atomic_max",
                 "and": "mp_atomic_and", "or": "mp_atomic_or", "xor": "mp_atomic_xor",
                 "exchange": "mp_atomic_exchange"}


def atomic(r: Renderer, call: ast.Call) -> str:
    b = call.target
    assert isinstance(b, Atomic)
    args = _args(r, call)
    if b.op == "load":
        return f"mp_atomic_load({args[0]})"
    if b.op == "store":
        return f"mp_atomic_store({args[0]}, {args[1]})"
    if b.op == "cas":
        return f"mp_atomic_compare_exchange({args[0]}, &({args[1]}), {args[2]})"
    return f"{_ATOMIC_FUNCS[b.op]}({args[0]}, {args[1]})"


def select(r: Renderer, call: ast.Call) -> str:
    a, b, c = _args(r, call)
    if call.select_per_component:
        ty = call.ty
        assert isinstance(ty, VectorType)
        c = f"mp_splat<bool, {ty.n}>({c})"
    return f"mp_select({a}, {b}, {c})"


def all_any(r: Renderer, call: ast.Call) -> str:
    return f"mp_{call.target.name}({r.expr(call.args[0])})"


def geometric(r: Renderer, call: ast.Call) -> str:
    name = call.target.name
    args = _args(r, call)
    if name == "dot":
        return f"mp_dot({args[0]}, {args[1]})"
    raise unsupported(f"'{name}'", "the translator has no rule for it yet (dot is translated)", call.pos)


def ldexp(r: Renderer, call: ast.Call) -> str:
    return f"mp_ldexp({', '.join(_args(r, call))})"


def bitfield(r: Renderer, call: ast.Call) -> str:
    args = _args(r, call)
    ty: Type = call.ty
    if isinstance(ty, VectorType):
        raise unsupported(f"'{call.target.name}' on vectors", "the translator has it for scalars only", call.pos)
    n = len(args)
    tail = [f"(unsigned)({a})" for a in args[n - 2:]]
    return f"mp_{call.target.name}({', '.join(args[:n - 2] + tail)})"


def numeric_limit(r: Renderer, call: ast.Call) -> str:
    v = call.const_value
    ty = call.ty
    if isinstance(ty, ScalarType):
        return r.float_literal(float(v), ty, call.pos) if ty.is_float else r.int_literal(int(v), ty, call.pos)
    raise unsupported("this numeric_limits member", "the translator has no rule for it", call.pos)


def simdgroup_matrix(r: Renderer, call: ast.Call) -> str:
    """The emulated SIMD-group matrices (the prelude's mp_sg_*, the simulator's lane layout)."""
    r.uses_simd = True
    name = call.target.name
    args = _args(r, call)
    if name == "make_filled_simdgroup_matrix":
        return f"mp_sg_fill<{r.ctype(call.ty.elem, call.pos)}>({args[0]})"
    if name == "simdgroup_matrix.thread_elements":
        return f"{args[0]}.e"
    if name in ("simdgroup_load", "simdgroup_store"):
        rest = args[2:]
        if len(rest) > 2:
            rest[2] = f"(bool)({rest[2]})"
        return f"mp_sg_{name.split('_')[1]}({', '.join(args[:2] + rest)})"
    if name == "simdgroup_multiply":
        return f"mp_sg_mma({args[0]}, {args[1]}, {args[2]})"
    return f"mp_sg_mma({args[0]}, {args[1]}, {args[2]}, &({args[3]}))"


def refused(why: str) -> Rule:
    def rule(r: Renderer, call: ast.Call) -> str:
        raise unsupported(f"'{call.target.name}'", why, call.pos)
    return rule


RULES: dict[str, Rule] = {
    "threadgroup_barrier": barrier,
    "simdgroup_barrier": barrier,
    "simd_ballot": ballot,
    "simd_active_threads_mask": active_mask,
    "simd_is_first": is_first,
    "select": select,
    "all": all_any,
    "any": all_any,
    "ldexp": ldexp,
    "extract_bits": bitfield,
    "insert_bits": bitfield,
    "transpose": lambda r, call: f"mp_transpose({r.expr(call.args[0])})",
    "make_filled_simdgroup_matrix": simdgroup_matrix,
    "simdgroup_load": simdgroup_matrix,
    "simdgroup_store": simdgroup_matrix,
    "simdgroup_multiply": simdgroup_matrix,
    "simdgroup_multiply_accumulate": simdgroup_matrix,
    "simdgroup_matrix.thread_elements": simdgroup_matrix,
    "simd_vote.all": refused("simd_vote objects are not translated yet (use simd_all / simd_any)"),
    "simd_vote.any": refused("simd_vote objects are not translated yet (use simd_all / simd_any)"),
    "simd_shuffle_and_fill_down": refused("not translated yet"),
    "simd_shuffle_and_fill_up": refused("not translated yet"),
    "frexp": refused("out-parameters of math functions are not translated yet"),
    "modf": refused("out-parameters of math functions are not translated yet"),
    "sincos": refused("out-parameters of math functions are not translated yet"),
    "ilogb": refused("not translated yet"),
}
for _name, _b in BUILTINS.items():
    if _name in RULES:
        continue
    if isinstance(_b, Elementwise):
        RULES[_name] = elementwise
    elif isinstance(_b, SimdShuffle):
        RULES[_name] = shuffle
    elif isinstance(_b, SimdReduce):
        RULES[_name] = reduce
    elif isinstance(_b, Atomic):
        RULES[_name] = atomic
    elif type(_b).__name__ == "Geometric":
        RULES[_name] = geometric


def builtin_rule(r: Renderer, call: ast.Call) -> str:
    target = call.target
    if call.const_value is not None and isinstance(call.ty, ScalarType):
        return numeric_limit(r, call)
    name = getattr(target, "name", None)
    rule = RULES.get(name) if name is not None else None
    if rule is None:
        raise unsupported(f"the call of '{name}'", "the translator has no rule for this function", call.pos)
    return rule(r, call)


def missing_builtin_rules() -> list[str]:
    return sorted(n for n in BUILTINS if n not in RULES)


_MISSING = missing_builtin_rules()
if _MISSING:  # a builtin added to the simulator's library needs its CUDA rule here
    raise ImportError(f"the CUDA renderer has no rule for the builtins {', '.join(_MISSING)}")

_ = (BOOL, scalar_of)
