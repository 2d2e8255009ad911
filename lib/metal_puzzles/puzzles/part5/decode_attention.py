"""V.4: attention for one new token over a KV cache (decode), one threadgroup per query head: each
SIMD-group takes every other key and keeps an online softmax (running maximum, running sum, running
weighted sum of values), and the SIMD-groups' partial results are merged once, through threadgroup
memory. Grouped-query attention: several query heads share one key/value head. The spec is
``mx.fast.scaled_dot_product_attention``.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div, randfloat
from ..catalogue.entry import Entry
from ..composition.closed_form import decode_attention_condition

TG = 64  # two SIMD-groups per query head
SIMD_GROUPS = TG // 32
MAX_D = 64  # the largest head dimension in any test
PER_LANE = MAX_D // 32  # dimensions of a head one lane owns, at most
LONGEST = 32  # the longest cache (keys) in any test; the budget is stated with it
KEYS_PER_GROUP = ceil_div(LONGEST, SIMD_GROUPS)

HEADER = f"""\
constant uint TG = {TG};
constant uint SIMD_GROUPS = TG / 32;
constant uint MAX_D = {MAX_D};  // head dimensions are at most {MAX_D}
constant uint PER_LANE = MAX_D / 32;  // dimensions a lane owns: lane, lane + 32
"""


def attention_spec(q, k, v):
    # q: (H, D), one new token's query heads; k, v: (KV, T, D), the cache. Query head h uses
    # key/value head h // (H / KV).
    H, D = q.shape
    out = mx.fast.scaled_dot_product_attention(q[None, :, None, :], k[None], v[None], scale=D**-0.5)
    return out.reshape(H, D)


def _case(q: np.ndarray, k: np.ndarray, v: np.ndarray, label: str, output_dtype: str | None = None) -> Case:
    heads = q.shape[0]
    return Case((q, k, v), q.shape, (TG, heads, 1), (TG, 1, 1), label, output_dtype=output_dtype)


def _draw(rng: np.random.Generator, heads: int, kv: int, t: int,
          d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Values in [-1, 1) on a grid of eighths: scores of a few units, a softmax neither flat nor one-hot.
    return randfloat(rng, (heads, d), -1, 1), randfloat(rng, (kv, t, d), -1, 1), randfloat(rng, (kv, t, d), -1, 1)


#: The scores the loud hidden tests pose: real attention scores reach the hundreds (a query aligned
#: with a direction every key shares, as models' outlier features and attention sinks are), where
#: exp(s) overflows float32 above 88.7 and underflows to 0 below -103: only a softmax that
#: subtracts its running maximum survives them.
LOUD_SCORE = 200.0


def _draw_loud(rng: np.random.Generator, heads: int, kv: int, t: int, d: int,
               score: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Every key is 1 + a small part (|b| <= 1/8, on a grid of 2**-5), every query dimension the same
    # offset A + a small part: scores s = (A * D + ...) / sqrt(D) lie near `score`, a few units
    # apart (a softmax neither flat nor one-hot, over scores far from 0).
    offset = score / np.sqrt(d)
    q = (np.float32(round(offset * 4) / 4) + randfloat(rng, (heads, d), -1, 1)).astype(np.float32)
    k = (1 + rng.integers(-4, 4, size=(kv, t, d)) / 32).astype(np.float32)
    return q, k, randfloat(rng, (kv, t, d), -1, 1)


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = [_case(*_draw(rng, h, kv, t, d), f"hidden test: {h} query heads, {kv} KV heads, {t} keys of {d}, {what}")
             for h, kv, t, d, what in ((4, 2, LONGEST, MAX_D, "the longest cache"),
                                       (2, 2, 1, 32, "one key: a SIMD-group with none"),
                                       (8, 1, 9, 32, "every query head on one KV head"),
                                       (4, 4, 17, MAX_D, "one query head per KV head"))]
    # Small caches: each test costs check() its run with a cost profile (bench_part5_checks.py).
    for h, kv, t, d, score, what in ((4, 2, 10, MAX_D, LOUD_SCORE, f"scores near {LOUD_SCORE:g}"),
                                     (4, 2, 7, 32, -0.8 * LOUD_SCORE, f"scores near {-0.8 * LOUD_SCORE:g}")):
        cases.append(_case(*_draw_loud(rng, h, kv, t, d, score),
                           f"hidden test: {h} query heads, {kv} KV heads, {t} keys of {d}, {what}"))
    # In half, as a model in half runs it: q, k, v and out are half, the scores near LOUD_SCORE. A
    # score near 200 kept in half is a multiple of 1/8 (11 bits), off by up to 1/16, and exp turns
    # that into a 6% error in a key's weight: the scores, the softmax and the sums are for float32.
    q, k, v = (a.astype(np.float16) for a in _draw_loud(rng, 4, 2, 8, MAX_D, LOUD_SCORE))
    cases.append(_case(q, k, v, f"hidden test: 4 query heads, 2 KV heads, 8 keys of {MAX_D} in half, scores near "
                       f"{LOUD_SCORE:g}", output_dtype="float16"))
    return cases


_Q = ((np.arange(128) % 7 - 3) / 4).astype(np.float32).reshape(4, 32)
_K = ((np.arange(320) % 5 - 2) / 4).astype(np.float32).reshape(2, 5, 32)
_V = ((np.arange(320) % 9 - 4) / 4).astype(np.float32).reshape(2, 5, 32)
VISIBLE = _case(_Q, _K, _V, "visible test")

SETUP = """\
q = ((mx.arange(128) % 7 - 3) / 4).reshape(4, 32)  # 4 query heads of D = 32
k = ((mx.arange(320) % 5 - 2) / 4).reshape(2, 5, 32)  # 2 KV heads, 5 cached keys
v = ((mx.arange(320) % 9 - 4) / 4).reshape(2, 5, 32)
output_shape = (4, 32)"""

TEMPLATE = """\
threadgroup float maxes[SIMD_GROUPS];
threadgroup float sums[SIMD_GROUPS];
threadgroup float partial[SIMD_GROUPS][MAX_D];
uint h = threadgroup_position_in_grid.y;  // the query head
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
uint H = q_shape[0];
uint KV = k_shape[0];
uint T = k_shape[1];
uint D = q_shape[1];
// FILL ME IN (roughly 40 lines): this head's KV head; your dims of q in registers; for keys
// t = sg, sg + SIMD_GROUPS, ...: the score (simd_sum), the online softmax update; then the
// SIMD-groups' (max, sum, weighted values) through threadgroup memory, one barrier, and merge.
"""

PUZZLE = Puzzle(
    id="decode_attention",
    number="V.4",
    title="Decode Attention",
    kernel_name="decode_attention",
    input_names=("q", "k", "v"),
    header=HEADER,
    description=f"""\
When a model writes a token, each attention layer compares the new token's **query** with the
**keys** of every token so far, kept in a **KV cache**, and returns a mix of their **values**:
for query head `h` with its key/value head `kv`,

```
s[t] = (q[h] . k[kv, t]) / sqrt(D)       for every cached token t
out[h] = sum over t of softmax(s)[t] * v[kv, t]
```

`q` has shape `(H, D)`, `k` and `v` `(KV, T, D)`. Models save cache memory with **grouped-query
attention**: `H / KV` query heads share one key/value head, `kv = h / (H / KV)` (in the visible
test, heads 0 and 1 read KV head 0; 2 and 3 read KV head 1).

One threadgroup of `TG = {TG}` threads (two SIMD-groups) per query head: the grid is
`({TG}, H, 1)`. Lane `lane` owns dimensions `lane` and `lane + 32` of the head (below `D`, which is
32 or {MAX_D}). SIMD-group `sg` takes keys `t = sg, sg + 2, ...` (`T` is 1 to {LONGEST}):

1. read your dimensions of `q[h]` once, into registers;
2. for each of your keys, `simd_sum` of your products with `k[kv, t]` is the dot product, in
   every lane; times `rsqrt(float(D))` it is the score `s`;
3. the **online softmax**: keep the largest score so far `m`, the sum `l` of `exp(s - m)` and,
   per dimension, the weighted sum `acc` of values. A new score `s` gives `m' = max(m, s)`; what
   you have is rescaled by `c = exp(m - m')` and the new key weighs `p = exp(s - m')`:
   `l = l * c + p`, `acc = acc * c + p * v[kv, t]`. Start from `m = -INFINITY` (then `c` is 0).
   No score is stored and the keys are read once.
4. Each SIMD-group then holds the softmax of its own keys. Lane 0 writes `m` and `l` to
   `maxes[sg]`, `sums[sg]`, every lane its `acc` to `partial[sg]`; after **one** barrier, the
   threads of SIMD-group 0 merge: with `M` the largest of the `maxes`, each group's numbers are
   scaled by `exp(maxes[s] - M)`, and `out = (sum of scaled partial) / (sum of scaled sums)`.
   A SIMD-group without keys (one hidden test has a single key) has `m = -INFINITY` and `l = 0`:
   its weight is `exp(-INFINITY) = 0`.

This is how MLX's `sdpa_vector` kernel does it, with more SIMD-groups.

**Hidden tests** pose values in `[-1, 1)` (scores of about one unit) and, as real attention does,
scores in the hundreds: one test near {LOUD_SCORE:g}, one near {-0.8 * LOUD_SCORE:g}. There `exp(s)`
overflows float32 (above 88.7) or rounds to 0 (below -103): a softmax that starts from `m = 0`
and never subtracts its maximum writes NaN. Subtracting the running maximum keeps every `exp`
in `(0, 1]`. One more test is in `half`, as models run in half precision: `q`, `k`, `v` and `out`
are `half`, the scores again near {LOUD_SCORE:g}. Read the halves into `float` and compute in `float`
(MLX's `sdpa_vector` accumulates in `float` too): a score near {LOUD_SCORE:g} kept in `half` is a
multiple of 1/8 (11 bits), off by up to 1/16, and `exp` makes that a 6% error in a key's weight.

**Budget**: at most {PER_LANE * (1 + 2 * KEYS_PER_GROUP)} global reads per thread ({PER_LANE} of `q`,
then {PER_LANE} of `k` and {PER_LANE} of `v` for each of at most {KEYS_PER_GROUP} keys), {PER_LANE} writes,
and one barrier per threadgroup.""",
    spec=attention_spec,
    spec_source=inspect.getsource(attention_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=PER_LANE * (1 + 2 * KEYS_PER_GROUP), global_writes=PER_LANE, max_barriers=1,
                  barriers_advice=("add each key's products across the SIMD-group with simd_sum and keep the "
                                   "SIMD-group's running maximum and sum in registers (no barrier needed), then "
                                   "merge the SIMD-groups' results once, behind one barrier")),
    work=lambda case: (TG, case.output_shape[0]),
    atol=1e-6,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
    condition=decode_attention_condition,  # every output depends on every key and value of its head
)


ENTRY = Entry(PUZZLE, setup=SETUP)
