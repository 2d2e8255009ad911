"""Hypothesis strategies for the front-end fuzz (issue 27, section 2): MSL kernel bodies built from
a grammar (literals of every kind, expressions, statements, declarations, preprocessor lines, raw
token soup), mutations of the book's reference solutions, and the one property every input must
keep: compiling and running it ends in a result, a located ``CompileError`` or a run-time finding
(``KernelRuntimeError``, ``SanitizerError``) - never another exception.

Shared by ``tests/msl/front/test_front_end_properties.py`` (a bounded, derandomized run) and
``benchmarks/fuzz_front_end.py`` (a long one).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np
from hypothesis import strategies as st

from metal_puzzles.msl import ArgumentError, CompileError, KernelRuntimeError, simulate
from metal_puzzles.msl.front.lexer import strip_comments, tokenize_line
from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary

# ------------------------------------------------------------------------------------------ literals
_DIGITS = st.text("0123456789", min_size=1, max_size=6)


@st.composite
def int_literal(draw) -> str:
    kind = draw(st.sampled_from(["dec", "hex", "oct", "bin", "huge", "sep"]))
    if kind == "dec":
        body = str(draw(st.integers(0, 2**70)))
    elif kind == "hex":
        body = "0x" + draw(st.text("0123456789abcdefABCDEF", min_size=0, max_size=18))
    elif kind == "oct":
        body = "0" + draw(st.text("012345678", max_size=8))
    elif kind == "bin":
        body = "0b" + draw(st.text("012", max_size=70))
    elif kind == "huge":
        body = "9" * draw(st.integers(20, 5000))
    else:
        body = draw(_DIGITS) + "'" + draw(_DIGITS)
    return body + draw(st.sampled_from(["", "", "u", "U", "l", "ul", "ll", "ull", "uu", "lul", "f", "h", "x"]))


@st.composite
def float_literal(draw) -> str:
    kind = draw(st.sampled_from(["dec", "exp", "hex", "edge"]))
    if kind == "dec":
        body = draw(_DIGITS) + "." + draw(st.text("0123456789", max_size=6))
    elif kind == "exp":
        body = draw(_DIGITS) + draw(st.sampled_from(["e", "E", ".e", ".5e"])) + draw(
            st.sampled_from(["", "+", "-"])) + str(draw(st.integers(0, 10**6)))
    elif kind == "hex":
        body = "0x" + draw(st.text("0123456789abcdef", min_size=1, max_size=8)) + draw(
            st.sampled_from(["", ".", ".8"])) + draw(st.sampled_from(["p", "P", ""])) + draw(
            st.sampled_from(["", "-", "+"])) + str(draw(st.integers(0, 10**6)))
    else:
        body = draw(st.sampled_from(["3.40282347e+38", "3.5e38", "1e-46", "65504.0", "65520.0", "0.", ".5",
                                     "1e", "1.5ee3", "0x.p1", "0x1.fffffep127"]))
    return body + draw(st.sampled_from(["", "f", "F", "h", "H", "ff", "hf", "l", "u"]))


_ESCAPES = [r"\n", r"\t", r"\0", r"\7", r"\77", r"\777", r"\400", r"\x", r"\x7f", r"\xfff", r"\x100",
            r"\u00e9", r"\u0041", r"\u12", r"\U0001F600", r"\q", r"\\", r"\'", '\\"', r"\?", r"\e", r"\a"]


@st.composite
def char_literal(draw) -> str:
    parts = draw(st.lists(st.one_of(st.sampled_from(_ESCAPES), st.sampled_from(list("abcAZ09 é\"")),
                                    st.characters(blacklist_categories=("Cs",), blacklist_characters="'\\\n\r")),
                          min_size=0, max_size=9))
    return "'" + "".join(parts) + "'"


LITERAL = st.one_of(int_literal(), float_literal(), char_literal(),
                    st.sampled_from(["true", "false", "INFINITY", "NAN", "M_PI_F", "FLT_MAX", "INT_MAX", '"str"']))

# ------------------------------------------------------------------------------------- expressions
NAMES = ["i", "j", "x", "s", "v", "k", "a", "b", "out", "tmp", "lokál", "N", "F", "thread_position_in_grid",
         "threadgroup_position_in_grid", "thread_position_in_threadgroup", "threads_per_threadgroup",
         "a_shape", "b_shape", "out_shape", "simd_lane_id"]
TYPES = ["int", "uint", "float", "half", "bool", "char", "uchar", "short", "ushort", "long", "ulong", "float2",
         "float4", "int2", "uint3", "half4", "bfloat", "size_t", "auto", "atomic_int", "float2x2", "void"]
FUNCTIONS = ["max", "min", "abs", "sqrt", "exp", "fma", "clamp", "select", "metal::max", "precise::sqrt",
             "simd_sum", "as_type<float>", "as_type<uint>", "static_cast<int>", "dot", "length", "popcount",
             "atomic_fetch_add_explicit", "threadgroup_barrier", "fast::exp", "isnan", "mix", "floor"]
BINARY = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "&&", "||", "<", ">", "<=", ">=", "==", "!=", ",",
          "=", "+=", "<<=", "%="]
UNARY = ["-", "+", "!", "~", "++", "--", "*", "&"]


@cache  # strategies are built once: building them is most of hypothesis's cost
def expression(depth: int = 3) -> st.SearchStrategy[str]:
    leaf = st.one_of(LITERAL, st.sampled_from(NAMES),
                     st.builds(lambda n, m: f"{n}.{m}", st.sampled_from(NAMES), st.sampled_from(
                         ["x", "y", "z", "w", "xy", "xyzw", "rgba", "q"])))
    if depth == 0:
        return leaf
    sub = st.deferred(lambda: expression(depth - 1))
    return st.one_of(
        leaf,
        st.builds(lambda a, op, b: f"{a} {op} {b}", sub, st.sampled_from(BINARY), sub),
        st.builds(lambda op, a: f"{op}{a}", st.sampled_from(UNARY), sub),
        st.builds(lambda a: f"({a})", sub),
        st.builds(lambda c, a, b: f"{c} ? {a} : {b}", sub, sub, sub),
        st.builds(lambda n, e: f"{n}[{e}]", st.sampled_from(["a", "b", "out", "tmp", "v", "a_shape"]), sub),
        st.builds(lambda f, args: f"{f}({', '.join(args)})", st.sampled_from(FUNCTIONS),
                  st.lists(sub, max_size=3)),
        st.builds(lambda t, args: f"{t}({', '.join(args)})", st.sampled_from(TYPES), st.lists(sub, max_size=4)),
        st.builds(lambda t, e: f"({t}){e}", st.sampled_from(TYPES), sub),
        st.builds(lambda e: f"sizeof({e})", st.one_of(sub, st.sampled_from(TYPES))),
        st.builds(lambda e: f"{e}++", sub),
    )


# -------------------------------------------------------------------------------------- statements
@cache
def statement(depth: int = 2) -> st.SearchStrategy[str]:
    expr = expression(2)
    simple = st.one_of(
        st.builds(lambda t, n, e: f"{t} {n} = {e};", st.sampled_from(TYPES), st.sampled_from(NAMES), expr),
        st.builds(lambda q, t, n, size: f"{q}{t} {n}[{size}];", st.sampled_from(["", "threadgroup ", "const ",
                                                                                 "constexpr ", "thread "]),
                  st.sampled_from(TYPES), st.sampled_from(NAMES), st.one_of(int_literal(), expr)),
        st.builds(lambda lv, op, e: f"{lv} {op} {e};", st.sampled_from(["out[i]", "out[0]", "x", "s", "v.x", "tmp[k]"]),
                  st.sampled_from(["=", "+=", "-=", "*=", "/=", "%=", "<<=", "|="]), expr),
        st.builds(lambda e: f"{e};", expr),
        st.sampled_from(["uint i = thread_position_in_grid.x;", "float s = 0.0f;", "break;", "continue;", "return;",
                         "threadgroup_barrier(mem_flags::mem_threadgroup);", ";", "{}", "using namespace metal;",
                         "typedef float real;", "struct P { float x; };", "enum E { A, B };", "goto end;",
                         "out[thread_position_in_grid.x] = a[thread_position_in_grid.x];"]),
    )
    if depth == 0:
        return simple
    sub = st.deferred(lambda: statement(depth - 1))
    block = st.lists(sub, max_size=3).map(lambda ss: "{ " + " ".join(ss) + " }")
    return st.one_of(
        simple, block,
        st.builds(lambda c, s, e: f"if ({c}) {s}" + (f" else {e}" if e else ""), expr, sub,
                  st.one_of(st.just(""), sub)),
        st.builds(lambda n, s: f"for (int k = 0; k < {n}; k++) {s}", st.integers(-1, 5), sub),
        st.builds(lambda c, s: f"while ({c}) {s}", expr, sub),
        st.builds(lambda s, c: f"do {s} while ({c});", sub, expr),
        st.builds(lambda e, cases: f"switch ({e}) {{ {' '.join(cases)} }}", expr,
                  st.lists(st.builds(lambda v, s: f"case {v}: {s}", int_literal(), sub), max_size=3)),
    )


# ------------------------------------------------------------------------- well-formed bodies
#: A prologue declaring what the well-formed statements use, so most of them compile and run.
PROLOGUE = ("uint i = thread_position_in_grid.x;\nfloat x = a[i];\nint k = b[i];\nfloat s = 0.0f;\n"
            "uint u = i * 3u;\nhalf h = half(x);\nfloat4 v = float4(x, 1.0f, 2.0f, -x);\n")
_TYPED_NAMES = {"float": ["x", "s", "v.x", "v.w", "float(h)", "a[i]", "a[k & 15]"],
                "int": ["k", "int(i)", "b[i]", "int(u % 16u)"], "uint": ["i", "u", "uint(k)"]}
_SMALL_INTS = st.integers(-40, 40).map(lambda n: f"({n})" if n < 0 else str(n))
_SMALL_FLOATS = st.one_of(st.floats(-100, 100, allow_nan=False, width=32).map(lambda f: f"({f!r}f)"),
                          st.sampled_from(["0.5f", "1e30f", "-0.0f", "INFINITY", "NAN", "1e-40f", "65504.0h"]))


@cache
def typed_expression(ty: str, depth: int = 3) -> st.SearchStrategy[str]:
    """An expression of type ``ty`` over the prologue's variables."""
    leaf = st.one_of(st.sampled_from(_TYPED_NAMES[ty]), _SMALL_FLOATS if ty == "float" else _SMALL_INTS)
    if depth == 0:
        return leaf
    sub = st.deferred(lambda: typed_expression(ty, depth - 1))
    other = st.deferred(lambda: typed_expression("int" if ty == "float" else "float", depth - 1))
    ops = ["+", "-", "*", "/"] + ([] if ty == "float" else ["%", "&", "|", "^", "<<", ">>"])
    funcs = ["max", "min"] + (["fma"] if ty == "float" else [])
    return st.one_of(
        leaf,
        st.builds(lambda a, op, b: f"({a} {op} {b})", sub, st.sampled_from(ops), sub),
        st.builds(lambda c, p, q: f"({c} > {p} ? {p} : {q})", sub, sub, sub),
        st.builds(lambda f, p, q: f"{f}({p}, {q}{', ' + q if f == 'fma' else ''})", st.sampled_from(funcs), sub, sub),
        st.builds(lambda e: f"{ty}({e})", other),
        st.builds(lambda e: f"-({e})", sub),
        *([st.builds(lambda e: f"abs({e})", sub)] if ty != "uint" else []),
        *([st.builds(lambda f, e: f"{f}({e})", st.sampled_from(["sqrt", "exp", "floor", "fabs", "sin", "rsqrt"]),
                     sub)] if ty == "float" else []),
    )


@cache
def typed_statement(depth: int = 2) -> st.SearchStrategy[str]:
    f, n = typed_expression("float"), typed_expression("int")
    simple = st.one_of(
        st.builds(lambda e: f"out[i] = {e};", f),
        st.builds(lambda e: f"s += {e};", f),
        st.builds(lambda e: f"k = {e};", n),
        st.builds(lambda e: f"x = {e};", f),
        st.builds(lambda e, d: f"out[({e}) & 15] = {d};", n, f),  # any index in bounds
        st.builds(lambda e: f"out[{e}] = 1.0f;", n),  # often out of bounds: a finding
        st.sampled_from(["threadgroup_barrier(mem_flags::mem_device);", "if (i == 0) return;", "h = h * h;",
                         "v = v.wzyx * 2.0f;", "u = u >> 1;", "s = simd_sum(s);"]),
    )
    if depth == 0:
        return simple
    sub = st.deferred(lambda: typed_statement(depth - 1))
    return st.one_of(
        simple,
        st.builds(lambda c, p, q: f"if ({c} < 0) {{ {p} }} else {{ {q} }}", n, sub, sub),
        st.builds(lambda m, p: f"for (int j = 0; j < {m}; j++) {{ {p} }}", st.integers(-1, 6), sub),
        st.builds(lambda p: f"while (k > 0) {{ k--; {p} }}", sub),
        st.builds(lambda c, p: f"switch ({c} & 3) {{ case 0: {p} break; case 1: s += 1.0f; default: break; }}", n,
                  sub),
    )


@st.composite
def well_formed_body(draw) -> str:
    """A body that mostly compiles: the prologue, then typed statements."""
    return PROLOGUE + "\n".join(draw(st.lists(typed_statement(), min_size=1, max_size=6))) + "\nout[i] += s;"


# ----------------------------------------------------------------------------------- preprocessor
@cache
def preprocessor_line() -> st.SearchStrategy[str]:
    expr = expression(2)
    return st.one_of(
        st.builds(lambda n, e: f"#define {n} {e}", st.sampled_from(["N", "F", "x", "A", "out", "__LINE__"]), expr),
        st.builds(lambda e: f"#define F(p) ((p) * {e})", expr),
        st.builds(lambda e: f"#define G(p, ...) p ## __VA_ARGS__ #p {e}", expr),
        st.builds(lambda e: f"#if {e}", expr),
        st.builds(lambda n: f"#line {n}", st.one_of(int_literal(), float_literal(), st.just('"f"'))),
        st.sampled_from(["#else", "#endif", "#elif 1", "#ifdef N", "#ifndef N", "#undef N", "#pragma unroll",
                         "#include <metal_stdlib>", "#include \"nope.h\"", "#", "#bogus", "#if", "#define",
                         "#define F(", "#if defined(N) && N > 2", "#if __has_include(<metal_stdlib>)",
                         "#line 7 \"other.metal\"", "%:define D 1", "#error stop"]),
    )


# ---------------------------------------------------------------------------------- token soup
SOUP_TOKENS = ["{", "}", "(", ")", "[", "]", "[[", "]]", ";", ",", "::", "<", ">", ">>", "<:", ":>", "<%", "%>",
               "%:", "%:%:", "#", "##", "\\\n", "\\", "@", "$", "`", "/*", "*/", "//", "\"", "'", "template",
               "typename", "struct", "namespace", "operator", "kernel", "device", "constant", "threadgroup",
               "[[buffer(0)]]", "auto", "decltype", "static_assert", "sizeof", "alignas", "\u00e9", "\u200b",
               "\U0001F600", "\x00", "\t", "\r", "\f", "\v"]


@st.composite
def token_soup(draw) -> str:
    parts = draw(st.lists(st.one_of(st.sampled_from(SOUP_TOKENS), st.sampled_from(NAMES), st.sampled_from(TYPES),
                                    LITERAL, st.text(max_size=3)), max_size=25))
    return " ".join(parts)


#: Constructs that nest when repeated (opening, closing): the front end bounds nesting and
#: expansion; a repeat must meet those bounds, never Python's recursion limit.
_NESTERS = [("(", ")"), ("-", ""), ("!", ""), ("1 ? ", " : 0"), ("x = ", ""), ("1 + ", ""), ("F(", ")"),
            ("{ ", " }"), ("if (1) ", ""), ("(float)", ""), ("static_cast<float>(", ")"), ("a[", "]"),
            ("#if 1\n", "\n#endif\n"), ("G(", ")"), ("float(", ")"), ("[[", "]]"), ("<", ">"), ("~", ""),
            ("sizeof(", ")"), ("/*", "*/"), ("\\\n", "")]


@st.composite
def deep_body(draw) -> str:
    """A construct repeated tens to thousands of times inside itself (found: conditional and
    assignment chains, deep sums, nested macro calls)."""
    opening, closing = draw(st.sampled_from(_NESTERS))
    n = draw(st.sampled_from([10, 63, 64, 65, 100, 161, 500, 3000]))
    inner = draw(st.sampled_from(["1", "x", "out[0] = 1;", ""]))
    core = opening * n + inner + closing * n
    return ("#define F(p) (p)\n#define G(p) p p\nfloat x = 0.0f;\n"
            + draw(st.sampled_from(["out[0] = {};", "{};", "x = {};", "{}"])).format(core))


@st.composite
def kernel_body(draw) -> str:
    """A kernel body: statements, preprocessor lines and sometimes raw token soup, one a line,
    some lines joined by a backslash-newline or split inside a token."""
    if draw(st.integers(0, 9)) == 0:
        return draw(deep_body())
    lines = draw(st.lists(st.one_of(statement(), typed_statement(), preprocessor_line(), token_soup()),
                          min_size=1, max_size=8))
    if draw(st.booleans()):
        lines.insert(0, PROLOGUE)
    text = "\n".join(lines)
    if draw(st.booleans()) and text:
        k = draw(st.integers(0, len(text)))
        text = text[:k] + draw(st.sampled_from(["\\\n", "\n", "/*", "*/", "//", "??=", "\\"])) + text[k:]
    return text


@st.composite
def header_text(draw) -> str:
    return "\n".join(draw(st.lists(st.one_of(
        preprocessor_line(),
        st.builds(lambda t, e: f"inline {t} helper({t} p) {{ return {e}; }}", st.sampled_from(TYPES), expression(2)),
        st.builds(lambda e: f"constant float K = {e};", expression(2)),
        st.builds(lambda n: f"template <typename T, int N = {n}> T twice(T v) {{ return v * N; }}", int_literal()),
        st.sampled_from(["struct P { float x; float y; float dot(P o) const { return x * o.x + y * o.y; } };",
                         "namespace ns { inline float f(float v) { return v - 1.0f; } }"]),
        token_soup()), max_size=3)))


# ------------------------------------------------------------------------- the book's kernels
@dataclass(frozen=True)
class Launch:
    """A real puzzle's launch: names, inputs, output and grid, with its reference solution."""

    name: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    source: str
    header: str
    inputs: tuple[np.ndarray, ...]
    output_shape: tuple[int, ...]
    output_dtype: str
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    init_value: float | None
    atomic_outputs: bool


def book_launches() -> list[Launch]:
    """Every puzzle whose reference solution is a kernel body (not a whole shader, nor a cell that
    wires other puzzles' kernels: Part II's gradients, Part V's decode step)."""
    from metal_puzzles.checking.wired import WiredPuzzle
    from metal_puzzles.puzzles import PUZZLES, solution_header, solution_source

    out = []
    for p in PUZZLES:
        src = solution_source(p)
        if isinstance(p, WiredPuzzle) or "kernel void" in src:
            continue
        c = p.visible
        out.append(Launch(p.kernel_name, tuple(p.input_names), tuple(p.output_names), src, solution_header(p) or "",
                          tuple(c.inputs), tuple(c.output_shape), c.output_dtype or p.output_dtype, tuple(c.grid),
                          tuple(c.threadgroup), p.init_value, p.atomic_outputs))
    return out


def _source_tokens(text: str) -> list[list[str]]:
    """The tokens of each line (a line the lexer refuses is kept whole)."""
    lines = []
    try:
        text = strip_comments(text)
    except CompileError:  # an unterminated /*: mutate the text as it is
        pass
    for n, line in enumerate(text.split("\n"), 1):
        try:
            lines.append([t.text for t in tokenize_line(line, "source", n)])
        except CompileError:
            lines.append([line])
    return lines


_VOCABULARY = SOUP_TOKENS + NAMES + TYPES + FUNCTIONS + BINARY + ["if", "for", "while", "return", "else"]


@st.composite
def mutated(draw, text: str) -> str:
    """``text`` with a few tokens dropped, repeated, swapped, replaced, or things inserted."""
    lines = _source_tokens(text)
    for _ in range(draw(st.integers(1, 4))):
        row = draw(st.integers(0, len(lines) - 1))
        toks = lines[row]
        k = draw(st.integers(0, len(toks)))
        action = draw(st.sampled_from(["drop", "dup", "swap", "replace", "insert", "literal", "expr", "line",
                                       "cut", "splice"]))
        if action == "drop" and k < len(toks):
            del toks[k]
        elif action == "dup" and k < len(toks):
            toks.insert(k, toks[k])
        elif action == "swap" and k + 1 < len(toks):
            toks[k], toks[k + 1] = toks[k + 1], toks[k]
        elif action == "replace" and k < len(toks):
            toks[k] = draw(st.sampled_from(_VOCABULARY))
        elif action == "insert":
            toks.insert(k, draw(st.sampled_from(_VOCABULARY)))
        elif action == "literal":
            toks.insert(k, draw(LITERAL))
        elif action == "expr":
            toks.insert(k, draw(expression(2)))
        elif action == "line":
            lines.insert(row, [draw(st.one_of(preprocessor_line(), statement(1)))])
        elif action == "cut":
            del lines[row + 1:]
            lines[row] = toks[:k]
        elif action == "splice" and k < len(toks) and len(toks[k]) > 1:
            # A backslash-newline inside a token: C++ joins the two halves back into one.
            j = draw(st.integers(1, len(toks[k]) - 1))
            toks[k] = toks[k][:j] + "\\\n" + toks[k][j:]
    return "\n".join(" ".join(toks) for toks in lines)


# ------------------------------------------------------------------------------ the property
#: How each input ended: every one of these is allowed; anything else is a bug the fuzz reports.
class Outcome:
    RESULT = "result"
    COMPILE_ERROR = "compile error"
    RUNTIME_FINDING = "run-time finding"


#: Grid and inputs for generated bodies: two inputs of 16 elements, one output, two threadgroups.
GENERATED = Launch("fuzz", ("a", "b"), ("out",), "", "",
                   (np.linspace(-2, 2, 16, dtype=np.float32), np.arange(16, dtype=np.int32) - 3), (16,), "float32",
                   (16, 1, 1), (8, 1, 1), 0.0, False)

#: Steps a fuzzed run may take (a thread's statements): enough for any loop the generators write.
FUZZ_MAX_STEPS = 5_000

_LINE_DIRECTIVE = re.compile(r"(^|\n)\s*(#|%:)\s*line", re.MULTILINE)


def run_front_to_back(launch: Launch, source: str, header: str | None = None) -> str:
    """Compile and run ``source`` with ``launch``'s names, inputs and grid through the public
    simulator API; return the ``Outcome``. Any exception other than a located ``CompileError``
    or a ``KernelRuntimeError`` (findings included) propagates: that is what the fuzz hunts."""
    header = launch.header if header is None else header
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clang's warnings, NumPy's overflow warnings, findings shown as warnings
        try:
            simulate(launch.name, list(launch.input_names), list(launch.output_names), source, header,
                     inputs=[x.copy() for x in launch.inputs], output_shapes=[launch.output_shape],
                     output_dtypes=[launch.output_dtype], grid=launch.grid, threadgroup=launch.threadgroup,
                     init_value=launch.init_value, atomic_outputs=launch.atomic_outputs, max_steps=FUZZ_MAX_STEPS,
                     trace=False)
        except CompileError as err:
            renumbered = _LINE_DIRECTIVE.search(source) or _LINE_DIRECTIVE.search(header)
            located = (not err.pos.file.startswith("<") and err.pos.col >= 1
                       and (err.pos.line >= 1 or renumbered is not None))
            if not located:
                raise AssertionError(f"compile error not located in the kernel's text: {err.pos}: {err.message}") \
                    from err
            return Outcome.COMPILE_ERROR
        except KernelRuntimeError as err:
            if not err.message:
                raise AssertionError("run-time error without a message") from err
            return Outcome.RUNTIME_FINDING
    return Outcome.RESULT


# --------------------------------------------------------------------------- whole shaders
SHADER_SIGNATURE = ("kernel void k(device float* out [[buffer(0)]], device const float* a [[buffer(1)]], "
                    "device const int* b [[buffer(2)]], uint3 tid [[thread_position_in_grid]])")


@st.composite
def whole_shader(draw) -> str:
    """A shader file (``compile_shader``'s input): helpers, then a kernel function ``k`` whose body
    is generated, sometimes templated with a host_name instantiation, sometimes mutated whole."""
    body = draw(st.one_of(kernel_body(), well_formed_body())).replace("thread_position_in_grid", "tid")
    body = "uint3 thread_position_in_grid = tid;\n" + body if draw(st.booleans()) else body
    helpers = draw(header_text())
    if draw(st.booleans()):
        text = f"{helpers}\n{SHADER_SIGNATURE} {{\n{body}\n}}\n"
    else:
        text = (f"{helpers}\ntemplate <typename T>\n{SHADER_SIGNATURE.replace('float* out', 'T* out')} {{\n{body}\n}}\n"
                'template [[host_name("k")]] kernel void k<float>(device float*, device const float*, '
                "device const int*, uint3);\n")
    return draw(mutated(text)) if draw(st.integers(0, 3)) == 0 else text


def run_shader(text: str) -> str:
    """Compile ``text`` as a whole shader and launch its kernel ``k`` on 16 threads; the
    ``Outcome``, under the same rule as ``run_front_to_back``. A shader without a kernel ``k`` (a
    mutation may rename it) is an ``ArgumentError`` naming the kernels it has: allowed too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            kernel = ShaderLibrary(text).kernel("k")
            kernel.launch({0: np.zeros(16, np.float32), 1: GENERATED.inputs[0].copy(), 2: GENERATED.inputs[1].copy()},
                          LaunchGeometry((16, 1, 1), (8, 1, 1)), max_steps=FUZZ_MAX_STEPS, trace=False)
        except CompileError as err:
            if err.pos.file.startswith("<") or err.pos.col < 1 or (err.pos.line < 1 and not _LINE_DIRECTIVE.search(text)):
                raise AssertionError(f"compile error not located in the shader's text: {err.pos}: {err.message}") \
                    from err
            return Outcome.COMPILE_ERROR
        except ArgumentError as err:
            if "has no kernel named 'k'" not in str(err):
                raise
            return Outcome.COMPILE_ERROR
        except KernelRuntimeError as err:
            if not err.message:
                raise AssertionError("run-time error without a message") from err
            return Outcome.RUNTIME_FINDING
    return Outcome.RESULT
