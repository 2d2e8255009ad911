"""Provenance of values for the run record: which memory elements each written value came from.

When a launch is traced, every value loaded from memory is a ``Tracked`` array: a NumPy array
(one entry per thread) that also carries, per thread, the set of memory elements ("atoms",
``(buffer, threadgroup, index)``) it was computed from. NumPy's dispatch protocols let every
arithmetic operation, conversion and per-thread select propagate those sets, so the executor
itself needs no changes; a store then records the atoms of the value it writes.

Values also wait in thread-private memory (``float v[PER_THREAD]``, a struct, a local whose
address is taken), whose loads and stores carry no atoms of their own: there each stored element
remembers the atoms of the value written into it (``remember``), and a load brings back those of
the elements it reads (``recall``), element by element at the index each thread computed. A value
that covers several elements at once (a vector, a whole struct) carries one set per thread, so a
whole copy of a struct gives each of its members the sources of all of them.

Only data flow is tracked: an index used to address memory does not flow into the loaded
value, and branch conditions do not flow into the values assigned under them.
"""

from __future__ import annotations

import operator

import numpy as np

EMPTY: frozenset = frozenset()
_union = np.frompyfunc(operator.or_, 2, 1)


def _prov(x, n: int):
    """Per-lane provenance of an operand, or None if it carries none."""
    if isinstance(x, Tracked) and x.prov is not None and x.ndim >= 1 and x.shape[0] == n:
        return x.prov
    return None


def _strip(x):
    if isinstance(x, Tracked):
        return x.view(np.ndarray)
    if isinstance(x, list | tuple):
        return type(x)(_strip(v) for v in x)
    return x


def _combine(provs: list) -> np.ndarray | None:
    provs = [p for p in provs if p is not None]
    if not provs:
        return None
    out = provs[0]
    for p in provs[1:]:
        if p is not out:
            out = _union(out, p)
    return out


def _lane_count(args) -> int | None:
    for a in args:
        if isinstance(a, Tracked) and a.prov is not None:
            return a.prov.shape[0]
        if isinstance(a, list | tuple):
            n = _lane_count(a)
            if n is not None:
                return n
    return None


def _wrap(result, prov, n):
    if prov is None or not isinstance(result, np.ndarray) or result.ndim == 0 or result.shape[0] != n:
        return result
    out = result.view(Tracked)
    out.prov = prov
    return out


class Tracked(np.ndarray):
    prov: np.ndarray | None

    def __array_finalize__(self, obj) -> None:
        self.prov = getattr(obj, "prov", None)

    def __getitem__(self, key):
        result = super().__getitem__(key)
        prov = self.prov
        if prov is None or not isinstance(result, np.ndarray):
            return result.view(np.ndarray) if isinstance(result, Tracked) else result
        first = key[0] if isinstance(key, tuple) and key else key
        if first is Ellipsis or (isinstance(first, slice) and first == slice(None)):
            if isinstance(key, tuple) and len(key) > 1 and key[0] is not Ellipsis:
                pass
            return _wrap(result.view(np.ndarray), prov, prov.shape[0])
        if isinstance(first, np.ndarray) and first.ndim >= 1:
            sub = prov[first]
            out = result.view(Tracked)
            out.prov = sub if sub.shape == result.shape[: sub.ndim] and sub.ndim == 1 else None
            return out
        return result.view(np.ndarray)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        n = _lane_count(inputs)
        raw = [_strip(i) for i in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(_strip(o) for o in kwargs["out"])
        result = getattr(ufunc, method)(*raw, **kwargs)
        if method != "__call__" or n is None:
            return result
        prov = _combine([_prov(i, n) for i in inputs])
        if isinstance(result, tuple):
            return tuple(_wrap(r, prov, n) for r in result)
        return _wrap(result, prov, n)

    def __array_function__(self, func, types, args, kwargs):
        n = _lane_count(args)
        result = func(*_strip(args), **{k: _strip(v) for k, v in kwargs.items()})
        if n is None:
            return result
        if func is np.where and len(args) == 3:
            cond = np.broadcast_to(_strip(args[0]), (n,) + np.shape(args[0])[1:])
            if cond.ndim > 1:
                cond = np.asarray(cond.reshape(n, -1).any(axis=1))
            a, b = (_prov(x, n) for x in args[1:])
            if a is None and b is None:
                return result
            a = a if a is not None else _empty(n)
            b = b if b is not None else _empty(n)
            return _wrap(result, np.where(cond, a, b), n)
        flat_args: list = []
        for a in args:
            if isinstance(a, list | tuple):
                flat_args.extend(a)
            else:
                flat_args.append(a)
        return _wrap(result, _combine([_prov(a, n) for a in flat_args]), n)


def _empty(n: int) -> np.ndarray:
    out = np.empty(n, dtype=object)
    out[:] = [EMPTY] * n
    return out


def track(values, atoms: list) -> Tracked:
    """Wrap freshly loaded per-lane values with one atom per lane (None for inactive lanes)."""
    n = len(atoms)
    prov = np.empty(n, dtype=object)
    prov[:] = [EMPTY if a is None else frozenset((a,)) for a in atoms]
    arr = np.asarray(values)
    if arr.ndim == 0 or arr.shape[0] != n:
        arr = np.broadcast_to(arr, (n,) + arr.shape).copy()
    out = arr.view(Tracked)
    out.prov = prov
    return out


def _per_lane(native, n: int) -> np.ndarray:
    """Element indices (uniform, (lanes,) or (lanes, k)) as a (lanes, k) array."""
    idx = np.asarray(native, dtype=np.int64)
    if idx.ndim == 0 or idx.shape[0] != n:
        idx = np.broadcast_to(idx, (n,) + idx.shape)
    return idx.reshape(n, -1)


def _elements_sources(mem) -> np.ndarray:
    """The atoms of the value stored in each element of thread-private memory ``mem`` (all its
    threads' regions, in its declared elements), kept on the memory object while it lives."""
    shadow = mem.provenance
    if shadow is None:
        shadow = mem.provenance = np.empty(mem.data.size, dtype=object)
        shadow.fill(EMPTY)
    return shadow


def remember(mem, native, value, lanes: np.ndarray, n: int) -> None:
    """A store of ``value`` by ``lanes`` into the elements ``native`` of thread-private ``mem``:
    each element written now holds that lane's atoms (none for a value computed from none)."""
    if lanes.size == 0:
        return
    idx = _per_lane(native, n)[lanes]
    prov = _prov(value, n)
    written = _empty(lanes.size) if prov is None else prov[lanes]
    _elements_sources(mem)[idx.reshape(-1)] = np.repeat(written, idx.shape[1])


def recall(mem, native, value, lanes: np.ndarray, n: int) -> Tracked:
    """A load by ``lanes`` of the elements ``native`` of thread-private ``mem``: the value, with
    the atoms of what was stored in the elements each lane read."""
    prov = _empty(n)
    if lanes.size and mem.provenance is not None:
        held = mem.provenance[_per_lane(native, n)[lanes]]
        prov[lanes] = held[:, 0] if held.shape[1] == 1 else _union.reduce(held, axis=1)
    arr = np.asarray(value)
    if arr.ndim == 0 or arr.shape[0] != n:
        arr = np.broadcast_to(arr, (n,) + arr.shape).copy()
    out = arr.view(Tracked)
    out.prov = prov
    return out


def sources_of(value, lanes: np.ndarray, n: int) -> list[frozenset]:
    """The atoms each of the given lanes' values came from."""
    prov = _prov(value, n)
    if prov is None:
        return [EMPTY] * len(lanes)
    return list(prov[lanes])
