"""V.9: attention for a whole prompt (prefill), flash style: L new queries against the T keys of a
cache that already holds them (T >= L, the queries at positions T - L ... T - 1), with the causal
mask, grouped-query heads, and tiles of keys and values loaded once into threadgroup memory for a
tile of queries; each query keeps an online softmax across the tiles. The spec is
``mx.fast.scaled_dot_product_attention`` with the causal mask.

A kernel that attends to a future key (no mask, or the mask at ``i`` instead of ``offset + i``)
is named by its own diagnosis (``diagnose``): which query, at which position, saw which key.
"""

from __future__ import annotations

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div, randfloat
from ..catalogue.entry import Entry
from ..composition.closed_form import attention_condition
from .decode_attention import LOUD_SCORE

BQ = 4  # queries per tile: one SIMD-group each
TG = 32 * BQ
BK = 32  # keys per tile
MAX_D = 64  # the largest head dimension in any test
PER_LANE = MAX_D // 32  # dimensions of a head one lane owns, at most
#: The longest cache of any test (a prompt's last 8 tokens at positions 512 to 519); the budget is
#: stated with it.
LONGEST = 520
TILES = ceil_div(LONGEST, BK)
#: Global reads per thread: its query's dimensions, then its share of each key tile and value tile.
READS_PER_TILE = 2 * BK * MAX_D // TG

HEADER = f"""\
constant uint BQ = {BQ};  // queries per threadgroup: one SIMD-group each
constant uint TG = 32 * BQ;
constant uint BK = {BK};  // keys per tile
constant uint MAX_D = {MAX_D};  // head dimensions are 32 or {MAX_D}
constant uint PER_LANE = MAX_D / 32;  // dimensions a lane owns: lane, lane + 32
"""


def prefill_attention_spec(q, k, v):
    # q: (H, L, D), the prompt's queries; k, v: (KV, T, D), the cache with the prompt's keys as its last
    # L rows: query i is at position T - L + i and sees keys 0 .. T - L + i. Query head h reads KV head
    # h // (H / KV).
    H, L, D = q.shape
    T = k.shape[1]
    if L == T:
        out = mx.fast.scaled_dot_product_attention(q[None], k[None], v[None], scale=D**-0.5, mask="causal")
    else:  # the explicit mask mlx-lm builds for a cache with an offset (True: the key is seen)
        seen = mx.arange(T - L, T)[:, None] >= mx.arange(T)[None]
        out = mx.fast.scaled_dot_product_attention(q[None], k[None], v[None], scale=D**-0.5, mask=seen)
    return out[0]


def launch_shape(heads: int, queries: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The grid and threadgroup: one threadgroup of TG threads per (query tile, head)."""
    return (TG, ceil_div(queries, BQ), heads), (TG, 1, 1)


def check_shapes(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...]) -> None:
    """Raise ValueError, naming the array and its shape, unless q (H, L, D), k and v (KV, T, D) are
    what the kernel handles: D 32 or MAX_D, H a multiple of KV, T >= L (the prompt's keys in the cache)."""
    if len(q) != 3 or len(k) != 3 or tuple(v) != tuple(k):
        raise ValueError(f"prefill attention takes q of shape (H, L, D) and k, v of one shape (KV, T, D); got q {tuple(q)}, "
                         f"k {tuple(k)}, v {tuple(v)}")
    (heads, queries, d), (kv, t, dk) = q, k
    if d not in (32, MAX_D) or dk != d:
        raise ValueError(f"prefill attention: the head dimension D must be 32 or {MAX_D} in q and k alike; got q {tuple(q)}, "
                         f"k {tuple(k)}")
    if kv == 0 or heads % kv:
        raise ValueError(f"prefill attention: the {heads} query heads of q {tuple(q)} must be a multiple of the {kv} KV "
                         f"heads of k {tuple(k)}")
    if t < queries:
        raise ValueError(f"prefill attention: the cache k {tuple(k)} holds {t} keys, fewer than the {queries} queries of "
                         f"q {tuple(q)}: append the prompt's keys to the cache first (T >= L)")


def _case(q: np.ndarray, k: np.ndarray, v: np.ndarray, label: str, output_dtype: str | None = None) -> Case:
    grid, threadgroup = launch_shape(q.shape[0], q.shape[1])
    return Case((q, k, v), q.shape, grid, threadgroup, label, output_dtype=output_dtype)


def _draw(rng: np.random.Generator, heads: int, kv: int, queries: int, t: int,
          d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Values in [-1, 1) on a grid of quarters: scores of a few units, a softmax neither flat nor one-hot.
    return (randfloat(rng, (heads, queries, d), -1, 1), randfloat(rng, (kv, t, d), -1, 1),
            randfloat(rng, (kv, t, d), -1, 1))


def _draw_loud(rng: np.random.Generator, heads: int, kv: int, queries: int, t: int, d: int,
               score: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # As V.4's loud tests: every key is 1 + a small part, every query dimension one offset A + a small
    # part, so that the scores lie near `score`, a few units apart.
    offset = score / np.sqrt(d)
    q = (np.float32(round(offset * 4) / 4) + randfloat(rng, (heads, queries, d), -1, 1)).astype(np.float32)
    k = (1 + rng.integers(-4, 4, size=(kv, t, d)) / 32).astype(np.float32)
    return q, k, randfloat(rng, (kv, t, d), -1, 1)


def _label(h: int, kv: int, queries: int, t: int, d: int, what: str) -> str:
    return (f"hidden test: {h} query heads, {kv} KV heads, {queries} queries at positions {t - queries} to {t - 1}, "
            f"D = {d}, {what}")


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = [_case(*_draw(rng, h, kv, n, t, d), _label(h, kv, n, t, d, what))
             for h, kv, n, t, d, what in ((1, 1, 8, LONGEST, MAX_D, "a long cache"),
                                          (4, 2, 13, 13, MAX_D, "a fresh prompt (no cache before it)"),
                                          (8, 1, 5, 60, 32, "every query head on one KV head"),
                                          (4, 1, 21, 21, 32, "a prompt of 21, queries in 6 tiles"))]
    # Small tests beside the long one: each costs check() its error model, a Jacobian of the spec.
    for h, kv, n, t, d, score in ((4, 2, 6, 40, MAX_D, LOUD_SCORE), (4, 2, 6, 40, 32, -0.8 * LOUD_SCORE)):
        cases.append(_case(*_draw_loud(rng, h, kv, n, t, d, score), _label(h, kv, n, t, d, f"scores near {score:g}")))
    # In half, as a model in half runs it: scores near LOUD_SCORE kept in half are off by up to 1/16,
    # a 6% error in a key's weight: the scores, the softmax and the sums are for float32.
    q, k, v = (a.astype(np.float16) for a in _draw_loud(rng, 4, 2, 6, 24, MAX_D, LOUD_SCORE))
    cases.append(_case(q, k, v, _label(4, 2, 6, 24, MAX_D, f"in half, scores near {LOUD_SCORE:g}"),
                       output_dtype="float16"))
    return cases


_Q = ((np.arange(4 * 6 * 32) % 7 - 3) / 4).astype(np.float32).reshape(4, 6, 32)
_K = ((np.arange(2 * 10 * 32) % 5 - 2) / 4).astype(np.float32).reshape(2, 10, 32)
_V = ((np.arange(2 * 10 * 32) % 9 - 4) / 4).astype(np.float32).reshape(2, 10, 32)
VISIBLE = _case(_Q, _K, _V, "visible test")

SETUP = """\
q = ((mx.arange(4 * 6 * 32) % 7 - 3) / 4).reshape(4, 6, 32)  # 4 query heads, 6 new tokens, D = 32
k = ((mx.arange(2 * 10 * 32) % 5 - 2) / 4).reshape(2, 10, 32)  # 2 KV heads, 10 cached keys (4 + 6 new)
v = ((mx.arange(2 * 10 * 32) % 9 - 4) / 4).reshape(2, 10, 32)
output_shape = (4, 6, 32)"""

TEMPLATE = """\
threadgroup float k_tile[BK][MAX_D];
threadgroup float v_tile[BK][MAX_D];
uint tile = threadgroup_position_in_grid.y;  // the query tile
uint h = threadgroup_position_in_grid.z;     // the query head
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
uint tid = thread_index_in_threadgroup;
uint L = q_shape[1];
uint D = q_shape[2];
uint KV = k_shape[0];
uint T = k_shape[1];
// FILL ME IN (roughly 50 lines): this SIMD-group's query i = tile * BQ + sg and its position
// offset + i; your dims of q in registers; for each key tile up to the tile's last position: the
// threadgroup loads k_tile and v_tile, a barrier, each query's online softmax over the keys it may
// see (t <= its position), a barrier; then write acc / l.
"""


#: How close a query's output must come to the attention over keys 0 .. j (relative to its largest
#: value) for the diagnosis to say it attended to exactly those keys; and how close to the right
#: prefix a row must be to count as right (the error model decides the verdict; this only reads it).
PREFIX_MATCH = 1e-2
RIGHT_ROW = 1e-4


def diagnose(case: Case, yours: np.ndarray) -> str | None:
    """Which query attended to which keys, where a wrong output is the attention over another prefix
    of the keys than the causal mask allows: for the first wrong query (head by head), the keys
    0 .. j whose softmax-weighted values it holds, said as a future key seen or a past key missed."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in case.inputs)
    y = np.asarray(yours, dtype=np.float64)
    heads, queries, d = q.shape
    kv_heads, t_keys, _ = k.shape
    offset = t_keys - queries
    for h in range(heads):
        keys, values = k[h // (heads // kv_heads)], v[h // (heads // kv_heads)]
        for i in range(queries):
            pos = offset + i
            errors = _prefix_errors(q[h, i] @ keys.T * d**-0.5, values, y[h, i])
            scale = max(float(np.max(np.abs(y[h, i]))), 1e-3) if np.isfinite(y[h, i]).all() else 0.0
            if scale and errors[pos] <= RIGHT_ROW * scale:
                continue  # this query is right
            seen = int(np.argmin(errors))
            if not scale or errors[seen] > PREFIX_MATCH * scale:
                return None  # no prefix of the keys explains it: another mistake
            where = f"query {i} (position {pos}) of head {h}"
            if seen > pos:
                why = ("the causal mask is missing" if seen == t_keys - 1 else
                       f"the causal mask lets it see {seen - pos} key{'s' if seen - pos > 1 else ''} too many")
                return (f"{where} attended to key {seen}, in its future (it may see keys 0 to {pos}): {why}. "
                        f"Query i is at position offset + i, where offset = T - L = {offset}.")
            why = (f"the mask is at i instead of offset + i, so it leaves out the cache before the prompt "
                   f"(offset = T - L = {offset})" if seen == i else
                   f"the causal mask stops {pos - seen} key{'s' if pos - seen > 1 else ''} short")
            return f"{where} attended to keys 0 to {seen} only, not 0 to {pos}: {why}."
    return None


def _prefix_errors(scores: np.ndarray, values: np.ndarray, row: np.ndarray) -> np.ndarray:
    """For each j, the largest difference between ``row`` and the softmax over keys 0 .. j of
    ``values`` (in float64; infinite where the row is not finite)."""
    if not np.isfinite(row).all():
        return np.full(len(scores), np.inf)
    weights = np.exp(scores - scores.max())
    totals = np.cumsum(weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        prefixes = np.cumsum(weights[:, None] * values, axis=0) / totals[:, None]
    errors = np.max(np.abs(prefixes - row), axis=1)
    errors[~np.isfinite(errors)] = np.inf
    return errors


PUZZLE = Puzzle(
    id="prefill_attention",
    number="V.9",
    title="Prefill Attention",
    kernel_name="prefill_attention",
    input_names=("q", "k", "v"),
    header=HEADER,
    description=f"""\
Before a model writes its first token it reads the whole prompt in one pass, the **prefill**: the
prompt's `L` tokens are appended to the KV cache (the KV-cache append puzzle), and each attention layer runs all
`L` queries against the cache at once. The cache holds `T >= L` keys: the `T - L` of an earlier
turn, then the prompt's own. Query `i` sits at **position** `offset + i` (with `offset = T - L`) and
may see keys `0 .. offset + i` only: the **causal mask** keeps it from its future.

```
s[i, t] = (q[h, i] . k[kv, t]) / sqrt(D)      for t <= offset + i
out[h, i] = sum over t <= offset + i of softmax(s[i])[t] * v[kv, t]
```

`q` and `out` have shape `(H, L, D)`, `k` and `v` `(KV, T, D)`, `kv = h / (H / KV)` as in V.4.
With `L == T` the mask is `"causal"`; with a cache before the prompt MLX's spec takes the explicit
mask mlx-lm builds, `positions >= key index` (MLX's `"causal"` means the same: aligned to the last key).

V.4 read each key once for one query. Here every key serves many queries, so this kernel reads it
once for a **tile** of them, as flash attention does. One threadgroup of `TG = {TG}` threads per
(query tile, head): the grid is `({TG}, ceil(L / {BQ}), H)`. SIMD-group `sg` owns query
`i = tile * {BQ} + sg` (none when `i >= L`; it still meets every barrier), lane `lane` its dimensions
`lane` and `lane + 32` (below `D`, which is 32 or {MAX_D}).

1. Read your dimensions of `q[h, i]` once, into registers.
2. Walk the keys in tiles of `BK = {BK}`, from key 0 to the tile's last position (later keys are
   every one of its queries' future: skip them). For each tile, the whole threadgroup copies the
   tile's keys and values into `k_tile` and `v_tile` (thread `tid` takes elements `tid, tid + TG, ...`,
   as `float`), then a **barrier**; each query runs the online softmax of V.4 over the tile's keys
   `t <= offset + i`, then a second **barrier**, before the next tile overwrites this one.
3. The **online softmax across tiles**: the running maximum `m`, sum `l` and weighted values `acc`
   carry from one tile to the next. A new score `s` gives `m' = max(m, s)`; what you have is
   rescaled by `c = exp(m - m')`, the key weighs `p = exp(s - m')`: `l = l * c + p`,
   `acc = acc * c + p * v`. After the last tile, `out = acc / l`. The picture after this text
   draws the state after each tile of one query's keys.

**Hidden tests** pose caches up to {LONGEST} keys (a prompt of 8 at positions {LONGEST - 8} to {LONGEST - 1}),
fresh prompts (`L == T`, no cache before), `H / KV` of 1, 2, 4 and 8, and, as real attention does,
scores in the hundreds: near {LOUD_SCORE:g} and near {-0.8 * LOUD_SCORE:g}, where a softmax that never
subtracts its maximum overflows to NaN. One test is in `half` (`q`, `k`, `v`, `out`), its scores near
{LOUD_SCORE:g}: keep the tiles, the scores and the sums in `float`, as MLX's attention kernels do.
A query that sees a future key (no mask, or the mask at `i` instead of `offset + i`) is named in
the verdict, with the key it saw.

**Budget**: at most {PER_LANE + TILES * READS_PER_TILE} global reads per thread ({PER_LANE} of `q`, then
{READS_PER_TILE} a tile, the thread's share of its keys and values, for each of at most {TILES} tiles): each
key and value is read from device memory once per query tile, not once per query. {PER_LANE} writes, and
two barriers per tile ({2 * TILES}).""",
    spec=prefill_attention_spec,
    spec_source=inspect.getsource(prefill_attention_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=PER_LANE + TILES * READS_PER_TILE, global_writes=PER_LANE, max_barriers=2 * TILES,
                  barriers_advice=("load a whole tile of keys and values, then one barrier; every query of the tile "
                                   "works through it; one more barrier before the next tile is loaded"),
                  global_reads_advice=(
                      "each query reads its keys and values from device memory itself; load each tile of keys and "
                      "values into threadgroup memory once, the threadgroup's threads sharing the copy, and let "
                      "the tile's queries read them there")),
    work=lambda case: (TG, case.grid[1], case.grid[2]),
    atol=1e-6,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
    condition=attention_condition,  # autodiff's Jacobian over 520 keys took seconds and 300 MiB a test
    diagnose=diagnose,
)


ENTRY = Entry(PUZZLE, setup=SETUP, figure="online_softmax",
              figure_alt="The online softmax merged across three tiles of keys: the running maximum, the rescale c, "
                         "the sum l and the weighted values acc after each tile, and out = acc / l")
