"""V.12, Part V's finale: a tiny transformer prefills a prompt, then decodes and samples, on the
learner's own kernels.

A ``WiredPuzzle``: the learner's cell hands their eight Part V kernels (the notebook's test
functions) to ``DecodeStepProblem``; the grader wires the kernels it reads from the notebook the
same way (``DecodeKernels.wire``). Each prompt is a test: generated on the kernels and with MLX
operations alone (``decode_step.generate``), it must sample the same tokens from the same logits,
every stage within its own puzzle's error model; a failure names the stage (kernel, phase, layer,
token, how far off).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...checking import Case, CaseStatus, CheckResult, Outcome, Subject, WiredPuzzle
from ...msl import StopReason
from ..catalogue.entry import Entry
from ..composition.decode_model import (
    CACHE_STEP,
    EMBEDDING_STD,
    HEAD_DIM,
    HEADS,
    HIDDEN,
    KV_HEADS,
    LAYERS,
    LOGITS_RTOL,
    PROMPTS,
    SEED,
    STAGE_PUZZLES,
    VOCAB,
    WIDTH,
    DecodeKernels,
    Prompt,
    TinyModel,
    case_prompt,
    generate_outcome,
    generate_with_mlx,
    prompt_case,
)

#: The weights' seed (the same model for every learner and every check).
MODEL_SEED = SEED


def generation_spec(prompt, cached, generate, seed, temperature, top_p):
    # The same model written with MLX operations: the tokens it samples after the prompt.
    p = Prompt(tuple(int(t) for t in np.asarray(prompt)), int(cached), int(generate), int(seed), float(temperature),
               float(top_p))
    return np.asarray(generate_with_mlx(TinyModel.from_seed(MODEL_SEED), p).tokens, dtype=np.uint32)


@dataclass(frozen=True)
class DecodeStepPuzzle(WiredPuzzle):
    """The finale's check: every prompt generated on the wired kernels (``DecodeKernels``)."""

    @property
    def subject(self) -> Subject:
        return Subject.MODEL

    def check_wired(self, wired: Any, seed: int = 0) -> CheckResult:
        return self.check_prompts(wired, self.cases(seed))

    def check_prompts(self, kernels: DecodeKernels, cases: Sequence[Case]) -> CheckResult:
        """The verdict on these prompts (``show()`` generates from the visible one alone)."""
        model = TinyModel.from_seed(MODEL_SEED)
        outcomes: list[Outcome] = []
        for case in cases:
            outcome = generate_outcome(model, case, kernels)
            outcomes.append(outcome)
            if outcome.status == CaseStatus.COMPILE_ERROR or outcome.stopped == StopReason.STEP_BUDGET:
                break  # every prompt would say the same, after as long a wait
        return CheckResult(self.title, outcomes, subject=Subject.MODEL)


#: The kernels the cell wires, in the order a layer first runs them, with what each does there.
WIRED = {"rms_norm": "V.1: every norm", "rope": "V.2b: the rotation in halves",
         "quantized_matvec": "V.3: the 4-bit products, a token at a time", "kv_cache_append": "the KV-cache append",
         "prefill_attention": "the prompt's causal attention", "gated_mlp": "the gated MLP's gate and up products",
         "decode_attention": "V.4: a new token's attention", "sampling": "top-p sampling"}

TEMPLATE = """\
from metal_puzzles import DecodeStepProblem

# The tiny model prefills a prompt, then decodes and samples, on your kernels.
decode_step_problem = DecodeStepProblem(
""" + "".join(f"    {f'{name}={name}_test,':44}# {what}\n" for name, what in WIRED.items()) + """\
)
decode_step_problem.show()
"""

LAYER_CODE = f"""\
def layer(h, cache, offset):                # h: (L, {WIDTH}), the tokens at offset .. offset + L - 1
    x = rms_norm(h, attention_norm)                                   # V.1
    q = matvec(wq, x).reshape(L, {HEADS}, {HEAD_DIM}).transpose(1, 0, 2)        # V.3, a token at a time
    k = matvec(wk, x).reshape(L, {KV_HEADS}, {HEAD_DIM}).transpose(1, 0, 2)        # {KV_HEADS} key/value heads
    v = matvec(wv, x).reshape(L, {KV_HEADS}, {HEAD_DIM}).transpose(1, 0, 2)
    q, k = rope(q, offset), rope(k, offset)                           # V.2b
    cache = kv_cache_append(k, v, offset, cache)                      # keys then values
    keys, values = cache[0, 0, :, :offset + L], cache[1, 0, :, :offset + L]
    if prefill:
        a = prefill_attention(q, keys, values)                        # causal over the cache
    else:
        a = decode_attention(q[:, 0], keys, values)                   # V.4, L = 1
    h = h + matvec(wo, a.transpose(1, 0, 2).reshape(L, {HEADS * HEAD_DIM}))
    x = rms_norm(h, mlp_norm)
    h = h + matvec(down, gated_mlp(x, gate, up))                      # silu(x Wg) * (x Wu), then V.3
    return h, cache

logits = matvec(head, rms_norm(h[-1], final_norm))   # the last token's, after both layers
token = sampling(logits, u, temperature, top_p)      # u: a uniform number from a fixed seed"""

_VISIBLE, _LONG, _COOL = PROMPTS

PUZZLE = DecodeStepPuzzle(
    id="decode_step",
    number="V.12",
    title="Prefill and Decode on Your Kernels",
    kernel_name="decode_step_problem",
    input_names=("prompt", "cached", "generate", "seed", "temperature", "top_p"),
    description=f"""\
Your kernels are the kernels a language model runs to answer a prompt. Here they run one: a tiny
Llama-style transformer with {LAYERS} layers, width {WIDTH}, {HEADS} query heads sharing {KV_HEADS} key/value heads of
{HEAD_DIM} dimensions (grouped-query attention, as in V.4), a gated MLP of width {HIDDEN}, a vocabulary of
{VOCAB} tokens, and random weights (made from a seed) quantized to 4 bits with `mx.quantize`, as
mlx-lm stores a model. It generates as mlx-lm does, in two phases:

- **prefill**: the whole prompt goes through each layer at once (`L` tokens: norms and rotations of
  `L` rows, the prompt's causal attention, the gated MLP of `L` rows), and each layer appends the
  prompt's keys and values to its cache, preallocated in MLX's layout (`T_max` positions, a multiple
  of {CACHE_STEP}, as mlx-lm's `KVCache` grows);
- **decode**: the last token's logits are sampled (temperature, then top-p, at a uniform number the
  host draws from a fixed seed), and the token drawn goes through every layer alone (`L = 1`,
  attention of one query over the whole cache), giving the next logits, and so on.

Both phases run the same layer:

```
{LAYER_CODE}
```

Every function there is one of your kernels, launched with its puzzle's grid; only the 4-bit
product is V.3's matrix-vector kernel, launched once a token (a prefill of `L` tokens launches it
`L` times a matrix). The cell below hands your eight test functions to `DecodeStepProblem`; run it
once they pass their own checks. `show()` generates from the first prompt and says what it gave.

`check()` generates from {len(PROMPTS)} prompts: one of {len(_VISIBLE.prompt)} tokens from the start of the cache (temperature
{_VISIBLE.temperature:g}, top-p {_VISIBLE.top_p:g}); one of {len(_LONG.prompt)} tokens (temperature {_LONG.temperature:g}, top-p {_LONG.top_p:g}) that follows a
conversation of {_LONG.cached} tokens already in the cache (prefilled with MLX's model beforehand, as
mlx-lm's prompt cache keeps one): your kernels prefill it at positions {_LONG.cached} to {len(_LONG.tokens) - 1} over a cache
of thousands of keys, and decode past them; and a cool one of {len(_COOL.prompt)} tokens from the start of the cache,
sampled at temperature {_COOL.temperature:g}, top-p {_COOL.top_p:g}, as a model is run for an answer that must be right (this
model's logits are of a few units where a trained model's reach tens: {_COOL.temperature:g} here is as cool as 0.2 there).
Each samples {_VISIBLE.generate} tokens. The same model runs with
MLX's own operations (`mx.fast.rms_norm`, `mx.fast.rope`, `mx.quantized_matmul`, a slice update,
`mx.fast.scaled_dot_product_attention` with the causal mask, and V.8's spec for the draw). A prompt
passes when your kernels sample MLX's tokens, each from logits within {LOGITS_RTOL:g} of their largest value.
On the way, each kernel's output is compared with its puzzle's spec on the same input, within the
error that puzzle allows: when a prompt fails, the verdict names the first stage that went wrong
(which kernel, in the prefill or in decode, which layer and token, how far off). A kernel that
passes its own tests can still fail here only on something its tests do not pose: the finale's
inputs are the model's own.

The model poses what real models do, where naive numerics fail: embeddings of about
{EMBEDDING_STD:g} (as Llama's), so a layer's first norm sees a mean square near 4e-4 and `EPS` counts;
a sharp query head in each layer whose scores reach the hundreds, where a softmax that never
subtracts its maximum overflows; positions past 2048, where a position kept in `half` is off;
a prompt prefilled at an offset, where a causal mask that forgets the offset lets a query see its
future, or hides its past; a gate row in layer 0 whose pre-activations pass 100 (as the products
behind real models' massive activations do), where a silu written with `exp(g)` overflows. At the
cool prompt's temperature, logits / T near 100, where a softmax that never subtracts its maximum
overflows; and its first draw is between two tokens whose head rows are the same (as a vocabulary's
duplicated tokens' are), so that their logits tie bit for bit and each has probability exactly 1/2
(the others' vanish beside theirs in float32): with top-p exactly 1/2, the cut lies exactly on a
cumulative sum, and only V.8's rules (equal probabilities in index order, a token in the nucleus
when the mass above it is *below* top-p) draw MLX's token.

*Grading:* the grader never runs a notebook's Python. It reads your eight kernels from the
notebook ({", ".join(f"`{name}`" for name in WIRED)}), wires them as this cell does, and runs
the same check. A kernel it cannot find is named; while all eight are the book's templates, the
finale counts as not attempted.""",
    spec=generation_spec,
    spec_source="""\
def generation_spec(prompt, cached, generate, seed, temperature, top_p):
    # The same model written with MLX operations: the tokens it samples after the prompt.
    p = Prompt(tuple(int(t) for t in np.asarray(prompt)), int(cached), int(generate), int(seed), float(temperature),
               float(top_p))
    return np.asarray(generate_with_mlx(TinyModel.from_seed(MODEL_SEED), p).tokens, dtype=np.uint32)""",
    visible=prompt_case(_VISIBLE, f"visible test: {_VISIBLE.describe()}"),
    hidden=lambda rng: [prompt_case(p, f"hidden test: {p.describe()}") for p in PROMPTS[1:]],
    template=TEMPLATE,
    kernel_puzzles=tuple(STAGE_PUZZLES.values()),
    wire=DecodeKernels.wire,
)

ENTRY = Entry(PUZZLE, setup=None)

__all__ = ["ENTRY", "PUZZLE", "MODEL_SEED", "DecodeStepPuzzle", "case_prompt"]
