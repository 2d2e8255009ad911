"""V.12, Part V's finale: a decode step of a tiny transformer on the learner's own kernels.

A ``WiredPuzzle``: the learner's cell hands their V.1 to V.5 kernels (the notebook's test
functions) to ``DecodeStepProblem``; the grader wires the kernels it reads from the notebook the
same way (``DecodeKernels.wire``). Each prompt is a test: decoded on the kernels and with MLX
operations alone (``decode_step``), it must give the same next token and logits, every stage
within its own puzzle's error model; a failure names the stage (kernel, layer, token, how far off).
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
    EMBEDDING_STD,
    HEAD_DIM,
    HEADS,
    HIDDEN,
    KV_HEADS,
    LAYERS,
    LOGITS_RTOL,
    PROMPTS,
    SEED,
    VOCAB,
    WIDTH,
    WINDOW,
    DecodeKernels,
    Prompt,
    TinyModel,
    decode_outcome,
    decode_with_mlx,
    prompt_case,
)
from . import argmax, decode_attention, quantized_matvec, rms_norm, rope

#: The weights' seed (the same model for every learner and every check).
MODEL_SEED = SEED


def decode_step_spec(prompt, prefilled):
    # The same model written with MLX operations: its logits after the last token of the prompt.
    tokens = tuple(int(t) for t in np.asarray(prompt))
    return decode_with_mlx(TinyModel.from_seed(MODEL_SEED), Prompt(tokens, int(np.asarray(prefilled))))[0]


@dataclass(frozen=True)
class DecodeStepPuzzle(WiredPuzzle):
    """The finale's check: every prompt decoded on the wired kernels (``DecodeKernels``)."""

    @property
    def subject(self) -> Subject:
        return Subject.MODEL

    def check_wired(self, wired: Any, seed: int = 0) -> CheckResult:
        return self.check_prompts(wired, self.cases(seed))

    def check_prompts(self, kernels: DecodeKernels, cases: Sequence[Case]) -> CheckResult:
        """The verdict on these prompts (``show()`` decodes the visible one alone)."""
        model = TinyModel.from_seed(MODEL_SEED)
        outcomes: list[Outcome] = []
        for case in cases:
            outcome = decode_outcome(model, case, kernels)
            outcomes.append(outcome)
            if outcome.status == CaseStatus.COMPILE_ERROR or outcome.stopped == StopReason.STEP_BUDGET:
                break  # every prompt would say the same, after as long a wait
        return CheckResult(self.title, outcomes, subject=Subject.MODEL)


TEMPLATE = '''\
from metal_puzzles import DecodeStepProblem

# The tiny model's forward pass, token by token, on your kernels: RMSNorm (V.1), the rotation in
# halves (V.2b), the 4-bit products (V.3), attention over the cache (V.4), the next token (V.5).
decode_step_problem = DecodeStepProblem(
    rms_norm=rms_norm_test,
    rope=rope_test,
    quantized_matvec=quantized_matvec_test,
    decode_attention=decode_attention_test,
    argmax=argmax_test,
)
decode_step_problem.show()
'''

LAYER_CODE = f"""\
h = embedding[token]
for layer in layers:                                    # two of them, each with its own cache
    x = rms_norm(h, layer.attention_norm)               # V.1
    q = matvec(layer.wq, x).reshape({HEADS}, {HEAD_DIM})              # V.3: {HEADS} query heads
    k = matvec(layer.wk, x).reshape({KV_HEADS}, {HEAD_DIM})              #      {KV_HEADS} key/value heads
    v = matvec(layer.wv, x).reshape({KV_HEADS}, {HEAD_DIM})
    q, k = rope(q, position), rope(k, position)         # V.2b
    cache.keys.append(k); cache.values.append(v)      # it keeps the last {WINDOW}
    h = h + matvec(layer.wo, attention(q, cache.keys, cache.values))   # V.4
    x = rms_norm(h, layer.mlp_norm)
    gate, up = matvec(layer.gate, x), matvec(layer.up, x)
    h = h + matvec(layer.down, silu(gate) * up)
logits = matvec(head, rms_norm(h, final_norm))          # after the prompt's last token
next_token = argmax(logits)                             # V.5"""

PUZZLE = DecodeStepPuzzle(
    id="decode_step",
    number="V.12",
    title="A Decode Step on Your Kernels",
    kernel_name="decode_step_problem",
    input_names=("prompt", "prefilled"),
    description=f"""\
Your kernels are the kernels a language model runs for every token it writes. Here they run one:
a tiny Llama-style transformer with {LAYERS} layers, width {WIDTH}, {HEADS} query heads sharing {KV_HEADS}
key/value heads of {HEAD_DIM} dimensions (grouped-query attention, as in V.4), an MLP of width {HIDDEN}, a
vocabulary of {VOCAB} tokens, and random weights (made from a seed) quantized to 4 bits with
`mx.quantize`, as mlx-lm stores a model. Each token of a prompt goes through the model in turn,
and each layer keeps the keys and values of the tokens so far in its cache:

```
{LAYER_CODE}
```

Every function there is one of your kernels, launched with its puzzle's grid: a token takes {LAYERS * 12 + 2}
launches, and the prompt's last token an argmax besides. The cell below hands your test functions
to `DecodeStepProblem`; run it once your five kernels pass their own checks. `show()` decodes the
first prompt and says what it gave.

`check()` decodes {len(PROMPTS)} prompts twice: {", ".join(str(list(p.tokens)) for p in PROMPTS[:2])}, one of
{len(PROMPTS[2].tokens)} tokens, and one of {len(PROMPTS[3].tokens)} whose first {PROMPTS[3].prefilled} tokens are *prefilled* (run
through MLX's model at once, as mlx-lm does before it decodes) and whose last {PROMPTS[3].decoded} are decoded at
positions past 2048. Attention sees the last {WINDOW} tokens (a sliding window, as Mistral's; the cache
keeps that many). It decodes them on your kernels, and with MLX's own operations (`mx.fast.rms_norm`, `mx.fast.rope`,
`mx.quantized_matmul`, `mx.fast.scaled_dot_product_attention`, `mx.argmax`). It passes when every
prompt gives MLX's next token, and logits within {LOGITS_RTOL:g} of their largest value. On the way,
each kernel's output is compared with its puzzle's spec on the same input, within the error that
puzzle allows: when a prompt fails, the verdict names the first stage that went wrong (which
kernel, which layer and token, how far off). A kernel that passes its own tests can still fail
here only on something its tests do not pose: the finale's inputs are the model's own.

The model poses what real models do, where naive numerics fail: embeddings of about
{EMBEDDING_STD:g} (as Llama's), so a layer's first norm sees a mean square near 4e-4 and `EPS` counts;
a sharp query head in each layer whose scores reach the hundreds, where a softmax that never
subtracts its maximum overflows; positions past 2048, where a position kept in `half` is off.

*Grading:* the grader never runs a notebook's Python. It reads your five kernels from the
notebook (`rms_norm`, `rope`, `quantized_matvec`, `decode_attention`, `argmax`), wires them as this
cell does, and runs the same check. A kernel it cannot find is named; while all five are the
book's templates, the finale counts as not attempted.""",
    spec=decode_step_spec,
    spec_source="""\
def decode_step_spec(prompt, prefilled):
    # The same model written with MLX operations: its logits after the last token of the prompt.
    tokens = tuple(int(t) for t in np.asarray(prompt))
    return decode_with_mlx(TinyModel.from_seed(MODEL_SEED), Prompt(tokens, int(np.asarray(prefilled))))[0]""",
    visible=prompt_case(PROMPTS[0], f"visible test: {PROMPTS[0].describe()}"),
    hidden=lambda rng: [prompt_case(p, f"hidden test: {p.describe()}") for p in PROMPTS[1:]],
    template=TEMPLATE,
    kernel_puzzles=(rms_norm.PUZZLE, rope.HALVES, quantized_matvec.PUZZLE, decode_attention.PUZZLE,
                    argmax.PUZZLE),
    wire=DecodeKernels.wire,
)

ENTRY = Entry(PUZZLE, setup=None)
