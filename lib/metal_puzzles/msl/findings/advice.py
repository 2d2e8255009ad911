"""Hints: what a finding adds about its likely cause and its fix, beyond what happened.

A finding says what a thread did (``reads shared[4294967295], outside the 8 elements``); the
hint says why and what to change. Hints are made where findings are made (the executor, the
sanitizer) from what those places know: the checked syntax tree of an index, the launch's
threadgroups, the thread attributes the kernel uses, and who reads the findings (``Audience``):
a caller of a kernel may change its launch (``init_value``, ``max_steps``), a learner solving a
puzzle writes only the kernel and cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...compat import StrEnum
from ..front import ast
from ..front.symbols import DeferredConstant, VarKind
from ..front.unparse import unparse
from ..lang.errors import Pos
from ..lang.lane_values import hex_word
from ..lang.types import AddressSpace, ScalarType


class Audience(StrEnum):
    """Who reads a run's findings, which decides what a hint may suggest."""

    CALLER = "caller"  # launches the kernel: may change init_value, max_steps, the grid
    PUZZLE = "puzzle"  # writes a puzzle's kernel: the puzzle's tests fix the launch


class HostApi(StrEnum):
    """How the kernel was launched, which decides how a fix is spelled: MLX generates a body's
    signature (atomic outputs are a launch option), a whole shader declares its own."""

    MLX_BODY = "mlx-body"  # mx.fast.metal_kernel: the body of a kernel, its signature generated
    WHOLE_SHADER = "whole-shader"  # compile_shader / Part IV: a whole kernel function


def atomic_update_spelling(audience: Audience, host: HostApi, preset: bool = True) -> str | None:
    """How this reader makes an update of a device element atomic, or None where atomics cannot
    give the right result: a puzzle whose outputs start uninitialised (an atomic add would add to
    garbage, and its learner cannot change the launch). ``preset``: the memory held values before
    the kernel ran (an output launched with init_value, a whole shader's buffer).

    Any kernel may update a plain buffer's element atomically through a cast, as Metal allows;
    only the caller of ``mx.fast.metal_kernel`` may instead make the outputs atomic
    (``atomic_outputs``, a launch option), which a whole shader lacks and a puzzle's tests fix."""
    if audience == Audience.PUZZLE and not preset:
        return None
    cast = ("update it atomically through a cast: atomic_fetch_add_explicit((device atomic_float*)&out[i], "
            "value, memory_order_relaxed)")
    if host == HostApi.MLX_BODY and audience == Audience.CALLER and not preset:
        # Atomic adds start from what the element holds: the launch must fill the output first.
        # (A whole shader's buffers are its caller's arrays, which always hold values.)
        return ("launch with init_value=0 and atomic_outputs=True (the outputs become atomic<T>) and add with "
                "atomic_fetch_add_explicit, or with init_value=0 and " + cast)
    if host == HostApi.MLX_BODY and audience == Audience.CALLER:
        return ("launch with atomic_outputs=True (the outputs become atomic<T>) and add with "
                "atomic_fetch_add_explicit, or " + cast)
    return cast


#: Why a puzzle whose outputs start uninitialised is not told to add with atomics.
NO_ATOMICS = "outputs start uninitialised in this puzzle, so atomic adds would add to garbage"


def device_write_race_fix(audience: Audience, host: HostApi, preset: bool = True) -> str:
    """The fix for two threads writing one device element (neither through an atomic)."""
    atomic = atomic_update_spelling(audience, host, preset)
    if atomic is None:
        return f"make each output element written by one thread ({NO_ATOMICS})"
    return f"make each output element written by one thread, or, where several threads must add to it, use atomics: {atomic}"


def device_update_race_fix(audience: Audience, host: HostApi, same_group: bool, preset: bool = True) -> str:
    """The fix for threads updating one device element (a read and a write that race)."""
    atomic = atomic_update_spelling(audience, host, preset)
    accumulate = f"accumulate with atomics ({atomic})" if atomic is not None else None
    if same_group:
        if accumulate is None:
            return ("several threads update one element: combine the values in threadgroup memory and let one "
                    f"thread write the result ({NO_ATOMICS})")
        return (f"several threads update one element: {accumulate}, or combine the values in threadgroup "
                "memory and let one thread write the result")
    # A puzzle is one kernel: its learner cannot split the work into two.
    split = "" if audience == Audience.PUZZLE else ", or split the work into two kernels"
    options = ", ".join(x for x in ("read only what this thread wrote", accumulate) if x is not None)
    return f"threads of different threadgroups cannot synchronise within a kernel: {options}{split}"


# ----------------------------------------------------------------------------- wording by audience
def uninitialized_fix(space: AddressSpace, audience: Audience, member: bool = False) -> str:
    """How to avoid reading memory nobody wrote, by where the memory lives; ``member``: what was
    read is a member of a thread's struct."""
    if member:
        return "initialise the struct ('S s = {...};') or give the member a default value in the struct"
    if space == AddressSpace.THREADGROUP:
        return "write it first (and put a threadgroup_barrier between the write and this read)"
    if space == AddressSpace.THREAD:
        return "initialise the array, e.g. 'float x[4] = {0};'"
    if audience == Audience.PUZZLE:
        return ("outputs start uninitialised in this puzzle (as on a GPU), so a thread must write an element "
                "before any thread reads it; compute the value in a local variable or in threadgroup memory and "
                "write it once")
    return "write it before reading it, or launch with init_value"


def lane_values(variables, slots: list, lane: int, n: int, limit: int = 6) -> str:
    """One thread's scalar local variables as 'i = 0, total = 3.5' (the first ``limit``), read
    from the frame's slots; pointers, arrays and vectors are left out."""
    parts = []
    for var in variables:
        if var.kind != VarKind.LOCAL or var.slot is None or var.slot >= len(slots) or slots[var.slot] is None:
            continue
        arr = np.asarray(slots[var.slot]) if not hasattr(slots[var.slot], "mem") else None
        if arr is None or arr.dtype == object or arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n):
            continue
        value = arr[lane] if arr.ndim == 1 else arr
        if value.dtype.kind == "b":
            text = "true" if value else "false"
        else:
            text = hex_word(value) or (str(int(value)) if value.dtype.kind in "iu" else f"{float(value):g}")
        parts.append(f"{var.name} = {text}")
        if len(parts) == limit:
            break
    return ", ".join(parts)


def step_budget_advice(audience: Audience) -> str:
    if audience == Audience.PUZZLE:
        return "every loop must end for every thread: check each loop's condition and step"
    return "raise max_steps if the kernel really needs more"


def bounds_fix(name: str) -> str:
    """The fix for an index outside its memory that no explanation of the index's arithmetic
    accounts for (a wrapped unsigned subtraction has its own, ``WrapAroundExplainer``)."""
    return (f"only threads whose index lies inside '{name}' may access it: guard the access with its length "
            "(if (i < n)), or check the bound of the loop that makes the index")


# ----------------------------------------------------------------------------- threadgroup races
class RaceShape(StrEnum):
    """Where a threadgroup-memory race's two accesses are, which decides where the barrier goes."""

    SAME_ACCESS = "same access"  # two threads at one access (one write each to one element)
    ONE_STATEMENT = "one statement"  # one statement reads and writes threadgroup memory
    ACROSS_ITERATIONS = "across iterations"  # the earlier access is further down: a previous loop iteration
    IN_ORDER = "in order"  # an earlier line, then this one


def race_shape(pos: Pos, other_pos: Pos, later_reads: bool = False, in_loop: bool = True) -> RaceShape:
    """``other_pos`` is the earlier of the two accesses in time, ``pos`` the later one;
    ``later_reads``: whether the later access is a read (of what the earlier one wrote);
    ``in_loop``: whether the later access ran inside a loop."""
    if other_pos == pos:
        return RaceShape.SAME_ACCESS
    if other_pos.file == pos.file and other_pos.line == pos.line:
        if not later_reads:
            return RaceShape.ONE_STATEMENT
        # One run of a statement reads all it reads before it writes: in a loop, a read that
        # finds another thread's write from the same line found one from an earlier iteration;
        # outside one, the line holds a write and then a read (two statements, say).
        return RaceShape.ACROSS_ITERATIONS if in_loop else RaceShape.IN_ORDER
    if other_pos.file == pos.file and other_pos.line > pos.line:
        # It ran first yet stands further down the code: the loop went round in between.
        return RaceShape.ACROSS_ITERATIONS
    return RaceShape.IN_ORDER


#: Where a barrier the advice adds must stand: a barrier inside a branch that some threads skip is
#: barrier divergence, so a statement guarded by an 'if' reads inside it and writes inside another.
EVERY_THREAD = "outside any if, so that every thread of the threadgroup reaches it"


def threadgroup_race_fix(pos: Pos, other_pos: Pos, later_writes: bool = True, in_loop: bool = True) -> str:
    """Where the barrier a threadgroup-memory race lacks goes, by where its accesses are;
    ``later_writes``: whether the later access (at ``pos``) is a write; ``in_loop``: whether it
    ran inside a loop."""
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup)"
    shape = race_shape(pos, other_pos, later_reads=not later_writes, in_loop=in_loop)
    if shape == RaceShape.SAME_ACCESS:
        return "make each thread write its own element"
    if shape == RaceShape.ONE_STATEMENT:
        return (f"line {pos.line} reads and writes threadgroup memory in one statement, so one thread may "
                "overwrite an element another thread is still reading: read into a register, barrier, then "
                f"write (for example 'float v = ...; {barrier}; ... = v;'; {EVERY_THREAD})")
    if shape == RaceShape.ACROSS_ITERATIONS:
        if other_pos.line == pos.line:
            ran = f"line {pos.line} wrote it in an earlier iteration of the loop and read it in a later one"
        else:
            ran = f"line {other_pos.line} ran in an earlier iteration of the loop and line {pos.line} in the next one"
        # At the end of the body, outside any branch: a barrier inside an 'if' some threads skip
        # would be barrier divergence.
        return (f"{ran}, with no barrier between: put a {barrier} at the end of the loop body, before the next "
                f"iteration's {'writes' if later_writes else 'reads'} ({EVERY_THREAD})")
    if other_pos.line == pos.line:
        return f"add {barrier} between the write and the read of line {pos.line} ({EVERY_THREAD})"
    return f"add {barrier} between the two accesses (line {other_pos.line}, then line {pos.line}; {EVERY_THREAD})"


def simdgroup_barrier_fix(simd: int) -> str:
    """The cheaper barrier, for a threadgroup race between two threads of SIMD-group ``simd``."""
    return (f"the two threads are in one SIMD-group ({simd}): if only the threads of one SIMD-group share these "
            "elements, simdgroup_barrier(mem_flags::mem_threadgroup) is enough, and unlike a threadgroup barrier it "
            "may sit where SIMD-groups take different branches")


def simdgroup_size_fix(width: int) -> str:
    """The fix for a SIMD-group matrix operation in a SIMD-group the launch left short (the
    threadgroup's size is not a multiple of the SIMD width): only the launch can fill it."""
    return f"launch with threadgroups of a multiple of {width} threads, so that every SIMD-group is whole"


def barrier_flags_fix(barrier: Pos, space: AddressSpace, other_pos: Pos, pos: Pos) -> str:
    """The fix for a race across a barrier that ran between the two accesses (at ``other_pos``,
    then ``pos``) but whose mem_flags do not order ``space`` memory."""
    flag = "mem_threadgroup" if space == AddressSpace.THREADGROUP else "mem_device"
    return (f"the barrier at line {barrier.line} synchronises execution but does not order {space} memory (its "
            f"mem_flags lack {flag}): use threadgroup_barrier(mem_flags::{flag}) between the two accesses (line "
            f"{other_pos.line} and line {pos.line})")


def barrier_divergence_fix(loop_line: int | None) -> str:
    """The fix for a barrier some threads of a threadgroup do not reach; ``loop_line``: the line
    of the loop the missing threads left sooner than the others (its condition depends on the
    thread), or None when a branch kept them away. Moving a loop's barrier out of the loop would
    leave its iterations unordered (a race), so a loop's cure is the same iterations for all."""
    reach = "a barrier must be reached by every thread of the threadgroup that has not returned"
    if loop_line is None:
        return f"{reach}; move it out of the branch that only some threads enter"
    return (f"{reach}: the loop at line {loop_line} runs more iterations in some threads than in others (its "
            "condition depends on the thread). Give every thread of the threadgroup the same iterations (a "
            "condition that does not depend on the thread) and put the thread's own test in an if inside the body, "
            "with the barrier outside that if")


def in_loop(ctx) -> bool:
    """Whether the statement running now is inside a loop (a switch is not one)."""
    st = ctx.loop
    while st is not None and st.is_switch:
        st = st.outer
    return st is not None


def more_elements(count: int) -> str:
    """' (and 5 more elements)' when a race spans ``count`` elements, '' for one."""
    if count <= 1:
        return ""
    return f" (and {count - 1} more element{'s' if count > 2 else ''})"


# ----------------------------------------------------------------------------- other races
def atomic_plain_race_fix(space: AddressSpace, same_group: bool, other_pos: Pos, pos: Pos) -> str:
    """The fix for an atomic and a plain access to one element that nothing orders (at
    ``other_pos``, then ``pos``). Making the plain access atomic too ends the race but not the
    question of which comes first: an initialising store may then land after some of the updates
    and erase them, so within a threadgroup the cure is the barrier; threadgroups have none."""
    if space == AddressSpace.THREADGROUP or same_group:
        flag = "mem_threadgroup" if space == AddressSpace.THREADGROUP else "mem_device"
        return (f"an atomic and a plain access to one element race: put threadgroup_barrier(mem_flags::{flag}) "
                f"between them (line {other_pos.line}, then line {pos.line}; {EVERY_THREAD}), so that one is done "
                "before the other starts (making the plain access atomic as well would leave their order open: an "
                "initialising store could still land after some of the updates)")
    return ("an atomic and a plain access to one element race, from different threadgroups, which no barrier "
            "orders: make every thread access the element through atomic functions (atomic_load_explicit / "
            "atomic_store_explicit for the plain ones) where their order does not matter, or split the work into "
            "two kernels")


def benign_race_fix() -> str:
    """Two threads writing one element the same value: harmless, but not race-free."""
    return ("a benign race (GPUs store whole elements, so the result is that value either way); let one thread "
            "write it to make the kernel race-free")


# ----------------------------------------------------------------------------- partial threadgroups
def partial_group_fix(ctx) -> str | None:
    """Why a kernel that computes positions from ``threads_per_threadgroup`` goes wrong on a launch
    whose last threadgroup is partial, or None when that is not this kernel's situation. The
    attributes are named as the kernel names them (a whole shader's parameters have names of their own)."""
    lanes = ctx.lanes
    tpt = ctx.attribute_name("threads_per_threadgroup")
    if tpt is None or lanes.uniform_groups or (ctx.body is not None and not scales_by(ctx.body, tpt)):
        return None
    full = tuple(int(t) for t in lanes.tg)
    partial = next(g for g in range(lanes.n_groups) if tuple(int(s) for s in lanes.group_size[g]) != full)
    dims = 3 if lanes.grid[2] > 1 else 2 if lanes.grid[1] > 1 else 1
    size, want = _size_text(lanes.group_size[partial][:dims]), _size_text(full[:dims])
    group = ctx.attribute_name("threadgroup_position_in_grid") or "threadgroup_position_in_grid"
    local = ctx.attribute_name("thread_position_in_threadgroup") or "thread_position_in_threadgroup"
    named = f"{tpt} (threads_per_threadgroup)" if tpt != "threads_per_threadgroup" else tpt
    return (f"{named} is the size of the thread's own threadgroup, and this launch ends in a "
            f"partial threadgroup of {size} thread{'' if size == '1' else 's'} where the others have {want}: a "
            "position computed as "
            f"{group} * {tpt} + {local} puts that threadgroup's threads on elements another threadgroup also "
            "covers. Use dispatch_threads_per_threadgroup (the threadgroup size the launch asked for) or "
            "thread_position_in_grid")


def scales_by(body: ast.Node, name: str) -> bool:
    """Whether the code multiplies by the variable ``name`` (or a component of it, or a local
    variable initialised or assigned from it, 'uint size = threads_per_threadgroup.x;'): how a
    position is made from the threadgroup size ('group * threads_per_threadgroup.x'), unlike a
    loop that only strides by it."""
    names = {name} | _copies_of(body, name)
    return any(isinstance(node, ast.Binary) and node.op == "*"
               and any(_is_name(node.left, n) or _is_name(node.right, n) for n in names)
               for node in ast.walk(body))


def _copies_of(body: ast.Node, name: str) -> set[str]:
    """The local variables that hold ``name`` (or a component of it) as it is: declared or
    assigned from it alone."""
    copies = set()
    for node in ast.walk(body):
        if isinstance(node, ast.Declarator) and node.init is not None and _is_name(node.init, name):
            copies.add(node.name)
        elif (isinstance(node, ast.Assign) and node.op == "=" and isinstance(node.target, ast.Name)
              and _is_name(node.value, name)):
            copies.add(node.target.ident)
    return copies


def _is_name(e: ast.Expr, name: str) -> bool:
    while isinstance(e, ast.Convert | ast.Cast | ast.Member):
        e = e.base if isinstance(e, ast.Member) else e.operand
    return isinstance(e, ast.Name) and e.ident == name


def _size_text(size) -> str:
    return str(int(size[0])) if len(size) == 1 else "(" + ", ".join(str(int(s)) for s in size) + ")"


# ----------------------------------------------------------------------------- unsigned wrap-around
@dataclass(frozen=True)
class _Subtraction:
    """An unsigned subtraction inside an index, with its operands compiled to be evaluated again."""

    text: str
    left_text: str
    right_text: str
    type_name: str
    bits: int
    left: Callable
    right: Callable


class WrapAroundExplainer:
    """Explains an out-of-bounds index that an unsigned subtraction made: ``local_i - 1`` with
    ``local_i == 0`` is not -1 but 4294967295. Called with each evaluation of the index (while
    findings are looked for); when a thread's index falls outside the memory and one of the
    subtractions went below zero for that thread, the explanation is kept on the context, and
    the out-of-bounds report at the same position adds it to its message."""

    def __init__(self, pos: Pos, subtractions: list[_Subtraction]) -> None:
        self.pos = pos
        self.subtractions = subtractions

    def __call__(self, ctx, mask, index, ptr, units: int) -> None:
        """``units``: the length of the pointer's memory in the units its offset counts."""
        if self.pos in ctx.index_notes or ptr.mem is None:
            return
        flat = np.asarray(ptr.off, dtype=np.int64) + np.asarray(index).astype(np.int64)
        bad = (flat < 0) | (flat >= units)
        if np.ndim(bad) == 0:
            bad = np.full(ctx.n, bool(bad))
        if mask is not None:
            bad = bad & mask
        if not bad.any():
            return
        lane = int(np.flatnonzero(bad)[0])
        for sub in self.subtractions:
            left = _lane_value(sub.left(ctx, mask), lane)
            right = _lane_value(sub.right(ctx, mask), lane)
            if left is None or right is None or left >= right:
                continue
            wrapped = (left - right) % (1 << sub.bits)
            values = _operands(sub, left, right)
            ctx.index_notes[self.pos] = (
                f"the index comes from '{sub.text}', which is unsigned ({sub.type_name}) arithmetic: "
                f"{'with ' + values + ' it' if values else 'it'} wraps around to {wrapped} instead of going "
                f"below zero. Test before subtracting (if ({sub.left_text} >= {sub.right_text})) or compute "
                f"in a signed type (int({sub.left_text}) - {sub.right_text})")
            return


def _operands(sub: _Subtraction, left: int, right: int) -> str:
    """The operands' values, as 'local_i = 0' (literals go without saying)."""
    parts = [f"{text} = {value}" for text, value in ((sub.left_text, left), (sub.right_text, right))
             if not _is_literal(text)]
    return " and ".join(parts)


def _is_literal(text: str) -> bool:
    return text.rstrip("uUlL").isdigit()


def _lane_value(v, lane: int) -> int | None:
    a = np.asarray(v)
    if a.ndim > 1:
        return None
    x = a[lane] if a.ndim == 1 else a
    return int(x)


def wraparound_explainer(index: ast.Expr, pos: Pos, compile_expr: Callable[[ast.Expr], Callable]
                         ) -> WrapAroundExplainer | None:
    """An explainer for an index expression that contains an unsigned subtraction whose operands
    can be evaluated again without side effects (no memory reads, calls or assignments), or
    None (most indices)."""
    found: list[_Subtraction] = []
    for node in _subtractions(index):
        text_l, text_r = unparse(node.left), unparse(node.right)
        if text_l is None or text_r is None or not (_pure(node.left) and _pure(node.right)):
            continue
        found.append(_Subtraction(f"{text_l} - {text_r}", text_l, text_r, str(node.op_ty), node.op_ty.bits,
                                  compile_expr(node.left), compile_expr(node.right)))
    return WrapAroundExplainer(pos, found) if found else None


def _subtractions(e: ast.Expr):
    """Unsigned integer subtractions in an expression, outermost first."""
    if isinstance(e, ast.Binary):
        ty = e.op_ty
        if e.op == "-" and isinstance(ty, ScalarType) and ty.is_int and not ty.signed:
            yield e
        yield from _subtractions(e.left)
        yield from _subtractions(e.right)
    elif isinstance(e, ast.Unary | ast.Convert | ast.Cast):
        yield from _subtractions(e.operand)
    elif isinstance(e, ast.Ternary):
        yield from _subtractions(e.then)
        yield from _subtractions(e.other)


_PURE_NAMES = (VarKind.LOCAL, VarKind.ATTR, VarKind.CONST)


def _pure(e: ast.Expr) -> bool:
    """Whether evaluating ``e`` again reads no memory, calls nothing and changes nothing."""
    if isinstance(e, ast.IntLit | ast.FloatLit | ast.BoolLit):
        return True
    if isinstance(e, ast.Name):
        sym = e.symbol
        return sym is not None and sym.kind in _PURE_NAMES and not isinstance(sym.const_value, list | DeferredConstant)
    if isinstance(e, ast.Member):
        return _pure(e.base)
    if isinstance(e, ast.Binary):
        return _pure(e.left) and _pure(e.right)
    if isinstance(e, ast.Unary):
        return e.op in ("-", "+", "!", "~") and _pure(e.operand)
    if isinstance(e, ast.Convert | ast.Cast):
        return _pure(e.operand)
    if isinstance(e, ast.Ternary):
        return _pure(e.cond) and _pure(e.then) and _pure(e.other)
    return False


__all__ = ["Audience", "RaceShape", "race_shape", "threadgroup_race_fix", "simdgroup_barrier_fix", "simdgroup_size_fix",
           "barrier_flags_fix", "barrier_divergence_fix", "atomic_plain_race_fix", "benign_race_fix", "in_loop", "more_elements", "WrapAroundExplainer", "wraparound_explainer", "partial_group_fix",
           "uninitialized_fix", "step_budget_advice", "bounds_fix", "lane_values"]
