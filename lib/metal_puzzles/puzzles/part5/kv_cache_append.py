"""V.7: the KV-cache append: a step's keys and values written into the preallocated cache at the
offset, in MLX's layout ``(B, n_kv_heads, T_max, D)``, one thread per element of the step (the
grid a host launches for a copy). The spec is MLX's slice update, as mlx-lm's ``KVCache`` writes
``self.keys[..., prev:offset, :] = keys``.

The one output holds both caches, keys then values: ``(2, B, KV, T_max, D)``. A custom kernel's
output is a fresh buffer, so each test's cache starts as mlx-lm allocates it, zeros; the kernel
writes the step's slots and must leave every other slot alone. The error model is exact: a copy
moves values without arithmetic.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import randfloat, scalar
from ..catalogue.entry import Entry

TG = 64  # threads a threadgroup, two SIMD-groups: a copy needs no more
#: Keys and values at the magnitudes a model's cache holds (rotated keys reach tens): a grid of
#: quarters in [-64, 64), so the comparison stays exact.
MAX_ABS = 64.0


def kv_cache_append_spec(k, v, offset, t_max):
    # k, v: (B, KV, L, D), one step's keys and values; the cache: (2, B, KV, T_max, D), zeros
    # where nothing was written. The step goes at positions offset .. offset + L - 1.
    B, KV, L, D = k.shape
    start = offset.item()
    cache = mx.zeros((2, B, KV, t_max.item(), D), dtype=k.dtype)
    cache[0, :, :, start:start + L, :] = k  # MLX's slice update
    cache[1, :, :, start:start + L, :] = v
    return cache


def _case(k: np.ndarray, v: np.ndarray, offset: int, t_max: int, label: str) -> Case:
    b, kv, length, d = k.shape
    # One thread per element of the step, in k's order: a copy's grid.
    return Case((k, v, scalar(offset), scalar(t_max)), (2, b, kv, t_max, d), (k.size, 1, 1), (TG, 1, 1), label)


def _step(rng: np.random.Generator, b: int, kv: int, length: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    return (randfloat(rng, (b, kv, length, d), -MAX_ABS, MAX_ABS),
            randfloat(rng, (b, kv, length, d), -MAX_ABS, MAX_ABS))


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    # (B, KV, L, D, offset, T_max): decode deep into a long cache, a prefill from 0 (two sequences),
    # a chunk of a prompt at a random offset, a step that fills the cache to its last slot.
    deep = int(rng.integers(3000, 4000))
    chunk = int(rng.integers(1, 1500))
    for b, kv, length, d, offset, t_max, what in (
            (1, 2, 1, 64, deep, 4096, "one token decoded thousands of tokens in"),
            (2, 2, 17, 32, 0, 256, "a prompt of two sequences prefilled from 0"),
            (1, 4, 5, 64, chunk, 1536, "a chunk of a prompt at a random offset"),
            (1, 8, 3, 32, 509, 512, "a step that fills the cache to its last slot")):
        cases.append(_case(*_step(rng, b, kv, length, d), offset, t_max,
                           f"hidden test: {b} x {kv} heads, {length} tokens of {d} at offset {offset} "
                           f"of {t_max}, {what}"))
    return cases


_K = ((np.arange(80) % 7 - 3) * 4).astype(np.float32).reshape(1, 2, 5, 8)
_V = ((np.arange(80) % 5 + 1) * 8).astype(np.float32).reshape(1, 2, 5, 8)
VISIBLE = _case(_K, _V, 3, 8, "visible test")

SETUP = """\
k = ((mx.arange(80) % 7 - 3) * 4).astype(mx.float32).reshape(1, 2, 5, 8)  # (B, KV, L, D): 5 new keys
v = ((mx.arange(80) % 5 + 1) * 8).astype(mx.float32).reshape(1, 2, 5, 8)
offset = mx.array(3, dtype=mx.int32)  # 3 tokens are already in the cache
t_max = mx.array(8, dtype=mx.int32)  # the cache holds 8 positions
output_shape = (2, 1, 2, 8, 8)  # keys then values, each (B, KV, T_max, D)"""

TEMPLATE = """\
uint i = thread_position_in_grid.x;  // the element of k (and of v) this thread copies
uint heads = k_shape[0] * k_shape[1];  // B * KV
uint L = k_shape[2];
uint D = k_shape[3];
uint T = t_max;
// FILL ME IN (roughly 6 lines): element i's head (b * KV + kv), token l and dimension d; where
// it goes in the cache (head stride T * D, position offset + l); then write both caches.
"""

PUZZLE = Puzzle(
    id="kv_cache_append",
    number="V.7",
    title="KV-Cache Append",
    kernel_name="kv_cache_append",
    input_names=("k", "v", "offset", "t_max"),
    output_names=("cache",),
    description=f"""\
Attention over a cache (V.4) needs the cache written: after each step, the step's keys and values
go in at the end of what is there. MLX and mlx-lm keep the cache **preallocated** in the layout
`(B, KV, T_max, D)`: batch, key/value head, `T_max` positions (a few hundred more than written, so
that most steps need no new buffer), head dimension. A step of `L` tokens (`L = 1` when decoding,
the prompt's length when prefilling) arrives as `k` and `v` of shape `(B, KV, L, D)` and goes to
positions `offset` to `offset + L - 1`, where `offset` is how many tokens the cache holds:

```
cache_k[b, kv, offset + l, d] = k[b, kv, l, d]        (and the same for v)
```

That is MLX's slice update, `keys[..., offset:offset + L, :] = k`. The output here holds both
caches, keys then values: shape `(2, B, KV, T_max, D)`. A custom kernel's output is a fresh buffer,
so the test's cache starts as mlx-lm allocates one, zeros: write the step's slots and nothing else.

The launch is the one a host uses for a copy, **one thread per element of the step**, in the
order of `k`: the grid is `(B * KV * L * D, 1, 1)` with threadgroups of `{TG}`. Thread `i` copies
element `i` of `k` and of `v`: its head `head = i / (L * D)` (that is `b * KV + kv`), its token
`l = i / D % L` and its dimension `d = i % D`. `offset` and `t_max` arrive as scalar inputs
(`const constant int&`).

The two layouts differ in one stride. In `k` a head's tokens follow each other: head `head`
starts at `head * L * D`. In the cache every head owns `T_max` positions, used or not: head
`head` starts at `head * T_max * D`, and the value cache starts after all `B * KV` heads of keys.
A kernel that steps over the cache's heads by `L * D`, the step's stride, writes every head but
the first at the wrong place, most often among another head's positions; one that forgets `offset`
writes over the tokens already there. The hidden tests
decode one token thousands of positions in, prefill two sequences from 0, write a chunk of a
prompt at a random offset and fill a cache to its last slot; keys and values are in [-64, 64).

**Budget**: 4 global reads and 2 writes per thread: `offset` and `t_max` once each, then one
element of `k` and one of `v`, each read once and written once.""",
    spec=kv_cache_append_spec,
    spec_source=inspect.getsource(kv_cache_append_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=4, global_writes=2),
    work=lambda case: (case.inputs[0].size,),
    atol=0.0,
    rtol=0.0,
    error_model=ErrorModel.EXACT_SUMS,
    init_value=0.0,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
