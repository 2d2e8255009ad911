"""Part V of the book: the kernels of a language model on Apple silicon (the norm, rotary
embeddings, the 4-bit quantized product and the gated MLP, attention over a cache, sampling: what
mlx-lm runs for every token), a whole-shader pipeline debugged stage by stage, and the finale: a prefill and decode on
the learner's own kernels. Each spec is MLX's own operation."""

from __future__ import annotations

from ..catalogue.entry import Part
from . import (
    argmax,
    decode_attention,
    gated_mlp,
    kv_cache_append,
    prefill_attention,
    quantized_matvec,
    radix_pass,
    rms_norm,
    rope,
    sampling,
    topk,
)
from .decode_step import ENTRY as DECODE_STEP_ENTRY

INTRO = """\
The kernels a language model runs for every token it writes: the norm each layer starts with,
rotary position embeddings, the product of a vector with a 4-bit quantized weight matrix (most of a
model's time on a Mac, and most of its memory), the gated MLP that fuses two such products with
silu, for one token or a whole prompt, in float32 and in half, attention over the cache of earlier
tokens, the append of each step's keys and values to that cache, the choice of the next token,
by argmax, among the top k or by temperature and top-p, and attention for a whole prompt at once
(prefill). Each spec is MLX's own operation
(`mx.fast.rms_norm`, `mx.fast.rope`, `mx.quantized_matmul` and `nn.silu`,
`mx.fast.scaled_dot_product_attention`, `mx.argmax`, `mx.argsort`, a slice update, `mx.softmax` and
`mx.cumsum`), and each kernel follows the plan of MLX's own: a threadgroup or a SIMD-group per row,
`simd_sum` and its kin, values read once into registers. The budgets are the per-thread counts of
Parts I and II and, where a puzzle is about speed, the cost model of Part III.

Two puzzles close the part. A radix sort's pass is a pipeline of three kernels in one shader
(`compile_shader`, as in Part IV), one of them planted wrong: you find which by checking each
stage against NumPy, the way a kernel writer debugs a pipeline. Then the finale: a tiny
two-layer transformer prefills a prompt and decodes and samples its answer on your own kernels
from this part, and must sample the tokens the same model written with MLX operations samples."""

PART_V = Part(
    number=7,
    folder="part5",
    title="Part V: The kernels of a language model",
    intro=INTRO,
    entries=(
        rms_norm.ENTRY,
        rope.TRADITIONAL_ENTRY,
        rope.HALVES_ENTRY,
        quantized_matvec.ENTRY,
        decode_attention.ENTRY,
        argmax.ENTRY,
        topk.ENTRY,
        kv_cache_append.ENTRY,
        sampling.ENTRY,
        prefill_attention.ENTRY,
        gated_mlp.ENTRY,
        radix_pass.ENTRY,
        DECODE_STEP_ENTRY,  # the finale, last
    ),
)
