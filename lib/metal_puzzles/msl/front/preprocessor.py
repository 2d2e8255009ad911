"""A C preprocessor for kernel text: #define (object- and function-like), #undef, #if family,
#include (system headers are implicit in Metal and ignored; header files found on an include
path, such as PyTorch's c10/metal, are read in), #pragma (ignored) and #error.

Macro state carries over from the header to the source, as it does when MLX pastes the header
above the generated kernel. Expanded tokens keep the position of the macro's use, so errors in
an expansion point at the line the learner wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..lang.errors import CompileError, Pos, SourceRegistry
from .constexpr import eval_preprocessor_expression
from .lexer import ID, NUM, OP, STR, Token, strip_comments, tokenize_line

# Headers a Metal kernel may include; their contents are built into the simulator.
KNOWN_SYSTEM_HEADERS = {
    "metal_stdlib", "metal_math", "metal_atomic", "metal_simdgroup", "metal_integer",
    "metal_compute", "metal_common", "metal_geometric", "metal_relational", "metal_numeric",
    "metal_types", "metal_pack", "metal_limits", "simd/simd.h", "metal_simdgroup_matrix",
    "metal_array", "metal_type_traits",
}


@dataclass
class Macro:
    name: str
    params: list[str] | None  # None for object-like macros
    body: list[Token]
    variadic: bool = False


#: Macros the Metal compiler predefines (Metal 3.2, as on current Apple silicon with MLX 0.32).
PREDEFINED = {"__METAL_VERSION__": "320", "__HAVE_BFLOAT__": "1", "__METAL__": "1"}


#: Tokens the preprocessor may handle for one kernel, header and source together, counting every
#: step of macro expansion (the longest puzzle solution needs about 600). Every later stage of
#: compiling costs time in proportion, so this bounds the time any source takes to compile.
MAX_EXPANSION_TOKENS = 50_000

#: The same bound for a whole shader file (``compile_shader``): a real one brings its headers
#: along, and PyTorch's MPS kernels with ``c10/metal`` inlined expand to 12,000-53,000 tokens (the
#: elementwise ones). Only the kernels called are checked, so the rest costs preprocessing and parsing alone.
MAX_SHADER_EXPANSION_TOKENS = 1_000_000

#: Tokens one macro use, as written, may expand to (counting every step of its expansion, the
#: macros inside it and its arguments' expansions included). The largest use in this repository's
#: kernels and shaders expands to 66 tokens; instantiation macros of real shaders to hundreds. A
#: chain of macros that each use the one before twice doubles at every level (2**59 tokens in 60
#: lines): counted as the expansion grows, such a use is refused after this many tokens (tens of
#: milliseconds), not after the whole budget (seconds and, for a shader, gigabytes).
MAX_MACRO_USE_TOKENS = 20_000


class IncludePath:
    """Where ``#include`` finds headers that are files (PyTorch's ``c10/metal/*.h`` in torch's
    ``include`` folder): each is read once, the first time it is included, as PyTorch's
    ``compile_shader`` embeds them; its text joins the registry, so errors quote its lines."""

    def __init__(self, folders: list[Path], registry: SourceRegistry | None = None, hint: str = "") -> None:
        self.folders = folders
        self.registry = registry
        self.hint = hint  # what to say when a header is in none of them
        self.included: set[Path] = set()

    def find(self, target: str) -> Path | None:
        for folder in self.folders:
            path = folder / target
            if path.is_file():
                return path
        return None


class Preprocessor:
    def __init__(self, max_tokens: int = MAX_EXPANSION_TOKENS, include_path: IncludePath | None = None,
                 max_use_tokens: int = MAX_MACRO_USE_TOKENS) -> None:
        self.max_tokens = max_tokens
        self.max_use_tokens = max_use_tokens
        self.include_path = include_path
        self.macros: dict[str, Macro] = {
            name: Macro(name, None, tokenize_line(value, "<predefined>", 0)) for name, value in PREDEFINED.items()
        }
        # Expansion work so far, over every file and every nested expansion (a macro's arguments
        # are expanded by nested calls): a count per call would let nesting or directives reset it.
        self.work = 0
        # The macro use (as written) being expanded, and how many more tokens it may produce.
        self._use: Token | None = None
        self._use_left = max_use_tokens
        self._nesting = 0  # depth of argument expansions under way

    # ----------------------------------------------------------------- driver
    def process(self, text: str, file: str) -> list[Token]:
        """Preprocess one file's text and return its tokens (no EOF token)."""
        lines = strip_comments(text, file).split("\n")
        out: list[Token] = []
        pending: list[Token] = []
        # Conditional stack entries: [this branch active, some branch taken, parent active]
        conds: list[list[bool]] = []
        active = True
        # '#line N "file"' renumbers the lines after it (generated sources point at what they were made from).
        shift = 0
        where = file
        i = 0
        while i < len(lines):
            lineno = i + 1 + shift
            line = lines[i]
            # Backslash-newline joins lines with nothing between (C++ translation phase 2:
            # 'ou\<newline>t' is 'out'). Each piece remembers where it starts in the joined line,
            # so a token keeps the line and column it was written at.
            pieces = [(0, lineno)]
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                line = line.rstrip()[:-1]
                i += 1
                pieces.append((len(line), i + 1 + shift))
                line += lines[i]
            i += 1
            stripped = line.lstrip()
            if stripped.startswith(("#", "%:")):
                out.extend(self._expand(pending))
                pending = []
                col = len(line) - len(stripped) + 1
                toks = _where_written(tokenize_line(line, where, lineno), pieces)
                if active and len(toks) > 1 and toks[1].text == "line":
                    args = toks[2:] if len(toks) > 2 and toks[2].kind == NUM else self._expand(toks[2:])
                    shift = _line_number(args, toks[1].pos) - (i + 1)
                    if len(args) > 1 and args[1].kind == STR:
                        where = args[1].text[1:-1]
                    continue
                if active and len(toks) > 1 and toks[1].text == "include":
                    out.extend(self._include(toks[2:], toks[0].pos))
                    continue
                active = self._directive(toks[1:], toks[0].pos, conds, active, where, lineno, col)
                continue
            if active:
                pending.extend(_where_written(tokenize_line(line, where, lineno), pieces))
        if conds:
            raise CompileError("unterminated conditional directive (missing #endif)", Pos(file, len(lines), 1))
        out.extend(self._expand(pending))
        return _drop_pragma_operators(out)

    # ------------------------------------------------------------- directives
    def _directive(self, toks: list[Token], pos: Pos, conds: list[list[bool]], active: bool, file: str, lineno: int,
                   col: int) -> bool:
        if not toks:
            return active  # the null directive
        name = toks[0].text
        args = toks[1:]
        if name in ("if", "ifdef", "ifndef"):
            if not active:
                conds.append([False, True, False])
                return False
            if name == "if":
                cond = self._eval_condition(args, toks[0].pos)
            else:
                if not args or args[0].kind != ID:
                    raise CompileError(f"macro name missing after #{name}", toks[0].pos)
                cond = (args[0].text in self.macros) == (name == "ifdef")
            conds.append([cond, cond, True])
            return cond
        if name in ("elif", "else", "endif"):
            if not conds:
                raise CompileError(f"#{name} without #if", toks[0].pos)
            top = conds[-1]
            if name == "endif":
                conds.pop()
                return conds[-1][0] if conds else True
            parent = top[2]
            if name == "else":
                top[0] = parent and not top[1]
            else:
                top[0] = parent and not top[1] and self._eval_condition(args, toks[0].pos)
            top[1] = top[1] or top[0]
            return top[0]
        if not active:
            return False
        if name == "define":
            self._define(args, toks[0].pos)
        elif name == "undef":
            if args:
                self.macros.pop(args[0].text, None)
        elif name == "pragma":
            pass  # e.g. '#pragma unroll': a hint with no effect on results
        elif name == "error":
            raise CompileError("#error " + " ".join(t.text for t in args), toks[0].pos)
        elif name == "warning":
            pass
        else:
            raise CompileError(f"invalid preprocessing directive '#{name}'", toks[0].pos)
        return True

    def _include(self, args: list[Token], pos: Pos) -> list[Token]:
        """The tokens an ``#include`` brings: none for Metal's and MLX's standard headers (built
        in), a header file's own (once per file) where the include path has one."""
        target = _header_name(args, "#include", pos)
        if _built_in(target):
            return []  # the simulator always provides Metal's and MLX's standard headers
        found = self.include_path.find(target) if self.include_path is not None else None
        if found is None:
            hint = (self.include_path.hint if self.include_path is not None else
                    "the simulator provides <metal_stdlib> and MLX's utility headers; put your own helpers in the "
                    "kernel's header string")
            raise CompileError(f"'{target}' file not found ({hint})", pos)
        assert self.include_path is not None
        if found in self.include_path.included:
            return []
        self.include_path.included.add(found)
        try:
            text = found.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise CompileError(f"'{target}' could not be read: {err}", pos) from None
        if self.include_path.registry is not None:
            self.include_path.registry.add(target, text)
        # The header's conditionals are its own; its macros join the including file's.
        return self.process(text, target)

    def _define(self, args: list[Token], pos: Pos) -> None:
        if not args or args[0].kind != ID:
            raise CompileError("macro name must be an identifier", pos)
        name_tok = args[0]
        rest = args[1:]
        params: list[str] | None = None
        variadic = False
        # A function-like macro has '(' immediately after its name, with no space.
        if rest and rest[0].is_op("(") and rest[0].pos.col == name_tok.pos.col + len(name_tok.text):
            params = []
            j = 1
            while j < len(rest) and not rest[j].is_op(")"):
                t = rest[j]
                if t.kind == ID:
                    params.append(t.text)
                elif t.is_op("..."):
                    variadic = True
                    params.append("__VA_ARGS__")
                elif not t.is_op(","):
                    raise CompileError("expected a parameter name in macro parameter list", t.pos)
                j += 1
            if j >= len(rest):
                raise CompileError("missing ')' in macro parameter list", pos)
            rest = rest[j + 1 :]
        self.macros[name_tok.text] = Macro(name_tok.text, params, rest, variadic)

    def _eval_condition(self, args: list[Token], pos: Pos) -> bool:
        # Replace defined(X) / defined X before expansion, as C requires.
        toks: list[Token] = []
        j = 0
        while j < len(args):
            t = args[j]
            if t.kind == ID and t.text == "defined":
                if j + 1 < len(args) and args[j + 1].is_op("("):
                    name = args[j + 2].text if j + 2 < len(args) else ""
                    j += 4
                else:
                    name = args[j + 1].text if j + 1 < len(args) else ""
                    j += 2
                toks.append(Token(NUM, "1" if name in self.macros else "0", t.pos))
                continue
            if t.kind == ID and t.text == "__has_include":
                # __has_include(<name>) / ("name"): whether an #include of it would find it.
                close = next((k for k in range(j + 1, len(args)) if args[k].is_op(")")), None)
                if close is None or not args[j + 1].is_op("("):
                    raise CompileError("expected '(<header>)' or '(\"header\")' after __has_include", t.pos)
                target = _header_name(args[j + 2 : close], "__has_include", t.pos)
                found = _built_in(target) or (
                    self.include_path is not None and self.include_path.find(target) is not None)
                toks.append(Token(NUM, "1" if found else "0", t.pos))
                j = close + 1
                continue
            toks.append(t)
            j += 1
        toks = self._expand(toks)
        # Identifiers left after expansion are 0 in #if, except the literals true/false.
        toks = [
            Token(NUM, "1" if t.text == "true" else "0", t.pos) if t.kind == ID else t
            for t in toks
        ]
        return eval_preprocessor_expression(toks, pos) != 0

    # -------------------------------------------------------------- expansion
    def _expand(self, tokens: list[Token]) -> list[Token]:
        """Expand macros in ``tokens``. What one macro use as written produces (its arguments'
        expansions, made by nested calls, included) is counted as it is produced, so a macro that
        doubles at each of 60 levels is refused after ``max_use_tokens``, whatever the total budget."""
        out: list[Token] = []
        stack = tokens[::-1]  # next token at the end
        nested = self._nesting > 0  # expanding a macro's argument: every token belongs to the use outside
        written = 0 if nested else len(stack)  # stack[:written] are tokens as written in the text
        while stack:
            t = stack.pop()
            if len(stack) < written:
                written = len(stack)
                self._use, self._use_left = t, self.max_use_tokens
            else:
                self._use_left -= 1
                if self._use_left < 0:
                    raise _use_too_large(self._use, self.max_use_tokens)
            self.work += 1
            if self.work > self.max_tokens:
                # Macros that expand to exponentially many tokens would take the machine down.
                raise CompileError(f"the kernel expands to more than {self.max_tokens} tokens, more than "
                                   "the simulator compiles; a macro probably expands into several copies of "
                                   "itself", t.pos)
            macro = self.macros.get(t.text) if t.kind == ID else None
            if macro is None or t.text in t.hide:
                out.append(t)
                continue
            if macro.params is None:
                body = self._substitute(macro, {}, t)
            else:
                if not stack or not stack[-1].is_op("("):
                    out.append(t)  # a function-like macro name not followed by '(' is not a call
                    continue
                stack.pop()
                args = self._collect_args(stack, t)
                written = min(written, len(stack))  # the arguments may have been written tokens
                body = self._substitute(macro, self._bind(macro, args, t), t)
            stack.extend(reversed(body))
        return out

    def _collect_args(self, stack: list[Token], name_tok: Token) -> list[list[Token]]:
        args: list[list[Token]] = [[]]
        depth = 0
        while True:
            if not stack:
                raise CompileError(f"unterminated call to macro '{name_tok.text}'", name_tok.pos)
            t = stack.pop()
            # The arguments count against the use too: nested calls 'F(F(F(...)))' read the rest
            # of the text again at every level, and would otherwise cost its square unbounded.
            self._use_left -= 1
            if self._use_left < 0:
                raise _use_too_large(self._use, self.max_use_tokens)
            if t.is_op("(", "[", "{"):
                depth += 1
            elif t.is_op(")", "]", "}"):
                if depth == 0:
                    break
                depth -= 1
            elif t.is_op(",") and depth == 0:
                args.append([])
                continue
            args[-1].append(t)
        if args == [[]]:
            return []
        return args

    def _bind(self, macro: Macro, args: list[list[Token]], name_tok: Token) -> dict[str, list[Token]]:
        params = macro.params or []
        if macro.variadic and len(args) >= len(params) - 1:
            fixed = len(params) - 1
            rest: list[Token] = []
            for k, a in enumerate(args[fixed:]):
                if k:
                    rest.append(Token(OP, ",", name_tok.pos))
                rest.extend(a)
            args = args[:fixed] + [rest]
        if len(args) != len(params) and not (len(params) == 1 and not args):
            raise CompileError(
                f"macro '{macro.name}' takes {len(params)} argument(s), {len(args)} given", name_tok.pos)
        if len(params) == 1 and not args:
            args = [[]]
        return dict(zip(params, args, strict=True))

    def _substitute(self, macro: Macro, binding: dict[str, list[Token]], use: Token) -> list[Token]:
        hide = use.hide | {macro.name}
        body = macro.body
        out: list[Token] = []
        expanded: dict[str, list[Token]] = {}
        unions: dict[frozenset[str], frozenset[str]] = {}  # one set per distinct hide set, not per token
        j = 0
        while j < len(body):
            t = body[j]
            if t.is_op("#") and j + 1 < len(body) and body[j + 1].text in binding:
                text = " ".join(x.text for x in binding[body[j + 1].text])
                out.append(Token(STR, '"' + text.replace('"', '\\"') + '"', use.pos, hide))
                j += 2
                continue
            pasting = (j + 1 < len(body) and body[j + 1].is_op("##")) or (j > 0 and body[j - 1].is_op("##"))
            if t.kind == ID and t.text in binding:
                arg = binding[t.text]
                if pasting:
                    replacement = arg
                else:
                    # An argument is expanded once, however often the body uses it (C 6.10.3.1).
                    if t.text not in expanded:
                        self._nesting += 1
                        try:
                            expanded[t.text] = self._expand(arg)
                        finally:
                            self._nesting -= 1
                    replacement = expanded[t.text]
                out.extend(Token(x.kind, x.text, use.pos, _union(x.hide, hide, unions)) for x in replacement)
                if len(out) > self._use_left:  # every one will be read: refuse before building more
                    raise _use_too_large(self._use, self.max_use_tokens)
            elif t.is_op("##"):
                out.append(t)
            else:
                out.append(Token(t.kind, t.text, use.pos, hide))
            j += 1
        # Token pasting: join the tokens on either side of each '##'.
        while any(x.is_op("##") for x in out):
            k = next(i for i, x in enumerate(out) if x.is_op("##"))
            left = out[k - 1] if k > 0 else None
            right = out[k + 1] if k + 1 < len(out) else None
            if left is None or right is None:
                raise CompileError("'##' cannot appear at either end of a macro expansion", use.pos)
            pasted = tokenize_line(left.text + right.text, use.pos.file, use.pos.line, use.pos.col)
            if len(pasted) != 1:
                raise CompileError(f"pasting '{left.text}' and '{right.text}' does not give a valid token", use.pos)
            out[k - 1 : k + 2] = [Token(pasted[0].kind, pasted[0].text, use.pos, hide)]
        return out


def _where_written(tokens: list[Token], pieces: list[tuple[int, int]]) -> list[Token]:
    """Tokens of a line joined from several by backslash-newlines, each placed on the physical
    line (and column) where it starts; ``pieces`` are (offset in the joined line, line number)."""
    if len(pieces) == 1:
        return tokens
    for t in tokens:
        offset = t.pos.col - 1
        start, line = next((p for p in reversed(pieces) if p[0] <= offset), pieces[0])
        t.pos = Pos(t.pos.file, line, offset - start + 1)
    return tokens


def _line_number(args: list[Token], pos: Pos) -> int:
    """The number a ``#line`` directive gives the next line: a simple decimal digit sequence, as
    clang requires (no '0x', no suffix), that fits its 32-bit line counter."""
    if not args or args[0].kind != NUM:
        raise CompileError("#line directive requires a positive integer argument", args[0].pos if args else pos)
    digits = args[0].text
    for k, c in enumerate(digits):
        if not (c.isdigit() and c.isascii()) and c != "'":
            raise CompileError("#line directive requires a simple digit sequence",
                               Pos(args[0].pos.file, args[0].pos.line, args[0].pos.col + k))
    digits = digits.replace("'", "").lstrip("0") or "0"
    if len(digits) > 10 or int(digits) >= 2**32:
        raise CompileError("#line directive requires a positive integer argument", args[0].pos)
    return int(digits)


def _union(a: frozenset[str], b: frozenset[str], cache: dict[frozenset[str], frozenset[str]]) -> frozenset[str]:
    """``a | b``, made once for each distinct ``a`` (the tokens of an argument mostly share one)."""
    found = cache.get(a)
    if found is None:
        found = cache[a] = a | b
    return found


def _use_too_large(use: Token | None, limit: int) -> CompileError:
    """The error for a macro use whose expansion outgrew ``limit`` tokens, at the use as written."""
    assert use is not None  # only tokens produced by expanding a written use are counted
    return CompileError(f"macro '{use.text}' expands to more than {limit} tokens, more than the simulator "
                        "compiles from one use of a macro; a macro that uses another twice doubles the "
                        "expansion at each level", use.pos)


def _header_name(args: list[Token], where: str, pos: Pos) -> str:
    """The header an '#include' or '__has_include' names: "name" or <name>."""
    if len(args) == 1 and args[0].kind == STR:
        return args[0].text[1:-1]
    if args and args[0].is_op("<") and args[-1].is_op(">"):
        return "".join(t.text for t in args[1:-1])
    raise CompileError(f"expected \"FILENAME\" or <FILENAME> after {where}", pos)


def _built_in(header: str) -> bool:
    """Metal's standard headers and MLX's, whose contents the simulator always provides."""
    return header in KNOWN_SYSTEM_HEADERS or header.startswith("mlx/")


def _drop_pragma_operators(tokens: list[Token]) -> list[Token]:
    """Remove ``_Pragma("...")`` (the operator form of #pragma, often in macros such as MLX's
    MLX_MTL_PRAGMA_UNROLL): like #pragma lines, it only hints the compiler."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if (t.kind == ID and t.text == "_Pragma" and i + 3 < len(tokens) and tokens[i + 1].is_op("(")
                and tokens[i + 2].kind == STR and tokens[i + 3].is_op(")")):
            i += 4
            continue
        out.append(t)
        i += 1
    return out
