"""A whole kernel function passed as ``source``.

Porting guides on the web show complete Metal kernels (``kernel void f(device const float* a
[[buffer(0)]], ...) { ... }``); ``mx.fast.metal_kernel`` wants only the body and writes the
signature itself from ``input_names``, ``output_names`` and the thread attributes the body
mentions. This module recognises the mistake and says what to change, comparing the function's
parameters with the names the kernel was made with.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..lang.errors import CompileError
from ..lang.kernel_parameters import METAL_ATTRIBUTES
from . import ast
from .lexer import ID, Token
from .parser import Parser

_ATTRIBUTES = {name for name, _ in METAL_ATTRIBUTES}


def starts_a_kernel_function(tokens: Sequence[Token]) -> bool:
    """The body opens like a kernel function: 'kernel', '[[kernel]]' or 'template <...>' then one."""
    i = 0
    if i < len(tokens) and tokens[i].text == "template":
        depth = 0
        for j in range(i + 1, len(tokens)):
            depth += tokens[j].is_op("<") - tokens[j].is_op(">")
            if depth == 0:
                i = j + 1
                break
    if i < len(tokens) and tokens[i].kind == ID and tokens[i].text == "kernel":
        return True
    return (i + 2 < len(tokens) and tokens[i].is_op("[") and tokens[i + 1].is_op("[")
            and tokens[i + 2].text == "kernel")


def refuse_kernel_function(tokens: list[Token], type_names: set[str], template_names: set[str],
                           input_names: Sequence[str], output_names: Sequence[str]) -> None:
    """Raise the compile error that explains what to pass instead of a whole kernel function."""
    start = tokens[0].pos
    advice: list[str] = []
    try:
        item = Parser(list(tokens), type_names=set(type_names), template_names=set(template_names)).parse_top_level()
    except CompileError:
        item = None
    if isinstance(item, ast.FuncDef):
        advice = _compare(item, list(input_names), list(output_names))
    raise CompileError(
        "the source must be the kernel's body (the statements between its braces), not a whole kernel "
        "function: MLX writes the signature itself, from input_names, output_names and the thread "
        "attributes the body mentions (a whole shader runs as written through metal_puzzles.compile_shader, "
        "the drop-in for torch.mps.compile_shader). Drop the signature and the outer braces"
        + ("; " + "; ".join(advice) if advice else ""), start)


def _compare(fn: ast.FuncDef, inputs: list[str], outputs: list[str]) -> list[str]:
    advice = []
    seen = set()
    for p in fn.params:
        name = p.name or "?"
        attribute = p.attribute
        if attribute in _ATTRIBUTES:
            if name != attribute:
                advice.append(f"MLX passes [[{attribute}]] as '{attribute}': write '{attribute}' where the body "
                              f"uses '{name}'")
            continue
        seen.add(name)
        if name in inputs or name in outputs:
            continue
        if p.type_spec.pointers and not p.type_spec.const:
            advice.append(f"parameter '{name}' is written to: add it to output_names (now {outputs})")
        else:
            advice.append(f"parameter '{name}' is not in input_names {inputs} or output_names {outputs}: add it "
                          "or rename it")
    missing = [n for n in inputs + outputs if n not in seen]
    if missing:
        advice.append("no parameter is named " + ", ".join(f"'{n}'" for n in missing)
                      + " (MLX gives the body one pointer per input and output name)")
    return advice
