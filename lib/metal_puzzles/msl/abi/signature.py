"""The kernel signature MLX 0.32 generates for ``mx.fast.metal_kernel``, reproduced in Python.

A learner writes only the *body* of a kernel; MLX wraps it in a generated function whose
parameter list, name and template instantiation depend on the call (input dtypes and sizes,
output dtypes, template arguments). The simulator must see exactly the same parameters, and
``verbose=True`` must print exactly the same text, so this module re-derives MLX's rules:

* Parameters, in order, with one ``[[buffer(i)]]`` index counted across all of them:
  each input (followed by its ``<name>_shape``, ``<name>_strides`` and ``<name>_ndim`` buffers
  when the source mentions them and the input has ndim >= 1), then every output, then the thread
  attributes the source mentions, in the fixed order of :data:`~metal_puzzles.msl.lang.kernel_parameters.METAL_ATTRIBUTES`.
* An input lives in ``device`` memory unless it holds fewer than
  :data:`MAX_CONSTANT_ARRAY_SIZE` (8) elements, then in ``constant`` memory; a 0-d input is a
  reference (``const constant T& x``) rather than a pointer.
* "Mentions" is a plain substring test on ``source`` (never ``header``): no word boundaries,
  comments count. So ``dispatch_threads_per_threadgroup`` also pulls in ``threads_per_threadgroup``.
* The function name (also the host name) is ``custom_kernel_<name>``, then ``_`` plus a template
  hash, then one ``_<type>`` per input (suffix ``s`` for 0-d, ``c`` for fewer than 8 elements)
  and one ``_<type>`` per output. See :func:`mangle_kernel_name`.

Everything here is pure Python + NumPy; dtypes are NumPy-style names (``'float32'``,
``'bfloat16'``...), because the MSL core must not import mlx.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...compat import StrEnum
from ..lang.kernel_parameters import METAL_ATTRIBUTES, ParamRole
from ..lang.types import lookup_builtin_type

#: Inputs with fewer elements than this are passed in the ``constant`` address space.
MAX_CONSTANT_ARRAY_SIZE = 8

_MSL_TYPE_NAMES: dict[str, str] = {
    "float32": "float",
    "float16": "float16_t",
    "bfloat16": "bfloat16_t",
    "float64": "double",
    "complex64": "complex64_t",
    "bool": "bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
}

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ERR = "[metal_kernel]"

TemplateValue = str | int | bool


@dataclass(frozen=True)
class InputDesc:
    """What the signature needs to know about one input: its dtype name, ndim and element count."""

    name: str
    dtype: str
    ndim: int
    size: int


class Passing(StrEnum):
    """How a parameter is declared: a pointer to its buffer, a reference, or a plain value."""

    POINTER = "*"
    REFERENCE = "&"
    VALUE = ""


@dataclass(frozen=True)
class Param:
    """One generated kernel parameter, as data: its element ``dtype`` (NumPy-style name; thread
    attributes are ``uint32`` with ``width`` 3 for the ``uint3`` ones), ``space``, ``const``,
    ``passing`` and ``atomic``. ``decl`` writes it the way MLX does (``const device float* a``),
    ``attribute`` is its Metal attribute (``[[buffer(0)]]`` or ``[[thread_position_in_grid]]``),
    and ``of`` names the input a shape/strides/ndim parameter describes.
    """

    name: str
    role: ParamRole
    dtype: str
    attribute: str
    passing: Passing = Passing.POINTER
    space: str | None = None  # 'device' or 'constant' for buffers; None for thread attributes
    const: bool = False
    atomic: bool = False
    width: int = 1
    of: str | None = None

    @property
    def type_text(self) -> str:
        """The element type as MLX spells it (``float``, ``float16_t``, ``atomic<int32_t>``, ``uint3``)."""
        if self.role == ParamRole.ATTRIBUTE:
            return "uint3" if self.width == 3 else "uint"
        if self.role in (ParamRole.SHAPE, ParamRole.NDIM):
            return "int"
        text = msl_type_name(self.dtype)
        return f"atomic<{text}>" if self.atomic else text

    @property
    def decl(self) -> str:
        """The declaration as MLX writes it: ``const device float* a``, ``uint3 thread_position_in_grid``."""
        qualifiers = ("const " if self.const else "") + (f"{self.space} " if self.space else "")
        return f"{qualifiers}{self.type_text}{self.passing.value} {self.name}"

    @property
    def text(self) -> str:
        """The parameter as MLX writes it in the list, indentation included, separator excluded."""
        return f"  {self.decl} {self.attribute}"

    @property
    def buffer_index(self) -> int | None:
        """The ``[[buffer(i)]]`` slot, or None for a thread attribute."""
        if not self.attribute.startswith("[[buffer("):
            return None
        return int(self.attribute[len("[[buffer(") : -len(")]]")])


@dataclass(frozen=True)
class GeneratedKernel:
    """The generated kernel for one call.

    ``full_source`` is byte for byte the text MLX prints with ``verbose=True``: header,
    template line, signature, body, closing brace and instantiation line. MLX compiles its
    utilities followed by this text: the preprocessed ``mlx/backend/metal/kernels/utils.h``
    (``metal_stdlib``, ``using namespace metal``, ``float16_t``/``bfloat16_t`` typedefs,
    ``elem_to_loc``, ``ceildiv``...), which ``verbose=True`` does not print.
    ``source_offset`` is where the learner's ``source`` starts inside ``full_source`` (the header
    starts at 0), so positions can be mapped back to what the learner wrote.
    """

    kernel_name: str
    params: tuple[Param, ...]
    template_line: str
    full_source: str
    signature: str = ""
    instantiation_line: str = ""
    source_offset: int = 0


# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------


def normalize_dtype_name(dtype: Any) -> str:
    """Return the canonical NumPy-style name of ``dtype`` (``'float32'``, ``'bfloat16'``, ...).

    Accepts a name, a NumPy dtype or scalar type, or the ``str()`` of an mlx dtype
    (``'mlx.core.float16'``), so callers need not import mlx here.
    """
    if isinstance(dtype, str):
        text = dtype.strip().removeprefix("mlx.core.")
        if text in ("bfloat16", "bool_"):
            return "bool" if text == "bool_" else text
        try:
            return np.dtype(text).name
        except TypeError as exc:
            raise ValueError(f"unknown dtype {dtype!r}") from exc
    name = getattr(dtype, "name", None)
    if name == "bfloat16":  # ml_dtypes' bfloat16 dtype
        return name
    try:
        return np.dtype(dtype).name
    except TypeError as exc:
        raise ValueError(f"unknown dtype {dtype!r}") from exc


def msl_type_name(dtype: str) -> str:
    """The Metal type name MLX writes for a dtype: ``float32`` -> ``float``, ``float16`` ->
    ``float16_t``, ``bfloat16`` -> ``bfloat16_t``, ``int32`` -> ``int32_t``, ``bool`` -> ``bool``."""
    name = normalize_dtype_name(dtype)
    try:
        return _MSL_TYPE_NAMES[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} cannot be used in a Metal kernel") from None


def describe_input(name: str, value: Any, dtype: str | None = None) -> InputDesc:
    """Describe an input the way MLX sees it after converting it to an array.

    Python scalars follow MLX's conversion: ``bool`` -> 0-d bool, ``int`` -> 0-d int32 (int64
    when it does not fit), ``float`` -> 0-d float32. ``dtype`` overrides the dtype name (for
    example ``'bfloat16'`` for a float32 array holding bfloat16 values).
    """
    if isinstance(value, bool):
        inferred = "bool"
    elif isinstance(value, int):
        inferred = "int32" if _INT32_MIN <= value <= _INT32_MAX else "int64"
    elif isinstance(value, float):
        inferred = "float32"
    else:
        inferred = normalize_dtype_name(np.asarray(value).dtype)
    shape = np.shape(value)
    return InputDesc(
        name=name,
        dtype=normalize_dtype_name(dtype) if dtype is not None else inferred,
        ndim=len(shape),
        size=int(np.prod(shape, dtype=np.int64)),
    )


# --------------------------------------------------------------------------------------------
# what the source mentions
# --------------------------------------------------------------------------------------------


def shape_flags(source: str, input_name: str) -> tuple[bool, bool, bool]:
    """Whether ``source`` mentions ``<name>_shape``, ``<name>_strides``, ``<name>_ndim``
    (substring test, exactly as MLX decides which metadata buffers to add)."""
    return (
        f"{input_name}_shape" in source,
        f"{input_name}_strides" in source,
        f"{input_name}_ndim" in source,
    )


def used_attributes(source: str) -> tuple[tuple[str, str], ...]:
    """The ``(attribute, type)`` pairs whose name occurs anywhere in ``source``, in MLX's order."""
    return tuple(pair for pair in METAL_ATTRIBUTES if pair[0] in source)


# --------------------------------------------------------------------------------------------
# template arguments and the kernel name
# --------------------------------------------------------------------------------------------


def _template_kind(value: Any) -> str:
    """``'bool'``, ``'int'`` or ``'typename'``; bool is tested before int, as MLX does."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int) and _INT32_MIN <= value <= _INT32_MAX:
        return "int"
    is_numpy_type = isinstance(value, type) and issubclass(value, np.generic)
    if isinstance(value, str | np.dtype) or is_numpy_type:
        try:
            msl_type_name(value)
        except ValueError:
            pass
        else:
            return "typename"
    raise ValueError(
        f"{_ERR} Invalid template argument {value!r}: a template value has to be a dtype, "
        "an int (32-bit) or a bool."
    )


def template_value(value: Any) -> TemplateValue:
    """A template argument as the simulator keeps it: a bool, an int, or a dtype's NumPy-style name.

    Anything else (a float such as ``1e-10``, a string that names no dtype) is refused with the
    message MLX gives, since MLX accepts only dtypes, 32-bit ints and bools as template values.
    """
    kind = _template_kind(value)
    return value if kind in ("bool", "int") else normalize_dtype_name(value)


def _template_value_text(value: TemplateValue) -> str:
    """How MLX streams a template value: bools as 1/0, ints in decimal, dtypes as Metal names."""
    kind = _template_kind(value)
    if kind == "bool":
        return "1" if value else "0"
    if kind == "int":
        return str(value)
    return msl_type_name(value)  # type: ignore[arg-type]


def template_declaration(template: Sequence[tuple[str, TemplateValue]]) -> str:
    """The ``template <typename T, int N, bool B>`` line (with newline), or ``''`` without args."""
    if not template:
        return ""
    parts = [f"{_template_kind(value)} {name}" for name, value in template]
    return "template <" + ", ".join(parts) + ">\n"


def template_arguments(template: Sequence[tuple[str, TemplateValue]]) -> str:
    """The instantiation argument list, e.g. ``<float, 3, 1>``; ``''`` without args."""
    if not template:
        return ""
    return "<" + ", ".join(_template_value_text(value) for _, value in template) + ">"


def template_hash(arguments: str) -> str:
    """MLX's name fragment for an argument list: ``<`` and ``>`` become ``_``, each ``", "``
    becomes ``_``, and the last character is dropped (``<float, 3>`` -> ``_float_3``)."""
    text = arguments.replace(", ", "_").replace("<", "_").replace(">", "_")
    return text[:-1]


def _input_suffix(desc: InputDesc) -> str:
    """``s`` marks a 0-d input, ``c`` a small (constant address space) one."""
    if desc.ndim == 0:
        return "s"
    if desc.size < MAX_CONSTANT_ARRAY_SIZE:
        return "c"
    return ""


def mangle_kernel_name(
    name: str,
    template: Sequence[tuple[str, TemplateValue]],
    inputs: Sequence[InputDesc],
    output_dtypes: Sequence[str],
) -> str:
    """The generated function name, also its host name.

    ``custom_kernel_<name>``; with template args ``_`` + :func:`template_hash` (which itself
    starts with ``_``, hence a double underscore: ``custom_kernel_myexp__float``); then
    ``_<type><suffix>`` per input and ``_<type>`` per output. A negative int keeps its ``-``,
    giving a name Metal rejects, exactly as in MLX.
    """
    kernel_name = f"custom_kernel_{name}"
    if template:
        kernel_name += "_" + template_hash(template_arguments(template))
    for desc in inputs:
        kernel_name += f"_{msl_type_name(desc.dtype)}{_input_suffix(desc)}"
    for dtype in output_dtypes:
        kernel_name += f"_{msl_type_name(dtype)}"
    return kernel_name


# --------------------------------------------------------------------------------------------
# argument checks shared with the metal_kernel drop-in
# --------------------------------------------------------------------------------------------


def check_output_names(output_names: Sequence[str]) -> None:
    """MLX refuses, when the kernel is made, a kernel without outputs."""
    if len(output_names) == 0:
        raise ValueError(f"{_ERR} A kernel needs at least one output name.")


#: Words a parameter cannot be named: C++'s keywords and the Metal Shading Language's own.
RESERVED_WORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class compl
    const const_cast constexpr continue decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
    operator or or_eq private protected public register reinterpret_cast return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw true try typedef typeid typename
    union unsigned using virtual void volatile wchar_t while xor xor_eq
    kernel vertex fragment device constant threadgroup thread threadgroup_imageblock ray_data object_data
    half bfloat uchar ushort uint ulong size_t ptrdiff_t as_type metal
""".split())


def check_names(input_names: Sequence[str], output_names: Sequence[str]) -> None:
    """The input and output names become the generated kernel's parameter names: each must be an
    identifier, not a reserved word or type name, distinct from the others, from the thread
    attributes and from the shape/strides/ndim parameters MLX may add for an input."""
    attributes = {name for name, _ in METAL_ATTRIBUTES}
    seen: dict[str, str] = {}
    metadata = {f"{name}_{suffix}": name for name in input_names if isinstance(name, str)
                for suffix in ("shape", "strides", "ndim")}
    for role, names in (("input", input_names), ("output", output_names)):
        if isinstance(names, str):
            raise ValueError(f"{_ERR} {role}_names must be a list of names, not the string {names!r}")
        for name in names:
            what = f"{role} name {name!r}"
            if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
                raise ValueError(f"{_ERR} {what} is not an identifier (letters, digits and '_', not starting with "
                                 "a digit): MLX declares a kernel parameter with each input and output name")
            if name in RESERVED_WORDS or lookup_builtin_type(name) is not None:
                raise ValueError(f"{_ERR} {what} is a reserved word or type name of the Metal Shading Language and "
                                 "cannot name a kernel parameter; choose another name")
            if name in seen:
                again = f"appears twice in {role}_names" if seen[name] == role else f"is also an {seen[name]} name"
                raise ValueError(f"{_ERR} {what} {again}: every input and output needs a name of its own")
            if name in attributes:
                raise ValueError(f"{_ERR} {what} is the name of the thread attribute MLX passes when the body "
                                 f"mentions it ([[{name}]]); choose another name")
            if name in metadata and metadata[name] != name:
                raise ValueError(f"{_ERR} {what} clashes with the '{name}' parameter MLX generates for input "
                                 f"'{metadata[name]}' when the body mentions it; choose another name")
            seen[name] = role


def _check_count(argument: str, actual: int, expected: int) -> None:
    if actual != expected:
        raise ValueError(
            f"{_ERR} `{argument}` has {actual} entries, but the kernel was declared with "
            f"{expected}."
        )


# --------------------------------------------------------------------------------------------
# parameters and text
# --------------------------------------------------------------------------------------------


def _input_params(name: str, desc: InputDesc, source: str, first_buffer: int) -> list[Param]:
    """An input's own parameter followed by the metadata buffers its name is mentioned with."""
    space = "constant" if desc.size < MAX_CONSTANT_ARRAY_SIZE else "device"
    passing = Passing.REFERENCE if desc.ndim == 0 else Passing.POINTER
    params = [Param(name=name, role=ParamRole.INPUT, dtype=desc.dtype, attribute=f"[[buffer({first_buffer})]]",
                    passing=passing, space=space, const=True)]
    if desc.ndim == 0:  # scalars carry no shape, whatever the source says
        return params
    metadata = (
        (ParamRole.SHAPE, "int32", Passing.POINTER),
        (ParamRole.STRIDES, "int64", Passing.POINTER),
        (ParamRole.NDIM, "int32", Passing.REFERENCE),
    )
    for (role, dtype, how), wanted in zip(metadata, shape_flags(source, name), strict=True):
        if wanted:
            index = first_buffer + len(params)
            params.append(Param(name=f"{name}_{role}", role=role, dtype=dtype, attribute=f"[[buffer({index})]]",
                                passing=how, space="constant", const=True, of=name))
    return params


def _output_param(name: str, dtype: str, buffer: int, atomic: bool) -> Param:
    return Param(name=name, role=ParamRole.OUTPUT, dtype=dtype, attribute=f"[[buffer({buffer})]]",
                 space="device", atomic=atomic)


def _attribute_param(attribute: str, type_text: str) -> Param:
    return Param(name=attribute, role=ParamRole.ATTRIBUTE, dtype="uint32", attribute=f"[[{attribute}]]",
                 passing=Passing.VALUE, width=3 if type_text == "uint3" else 1)


def _parameter_list_text(params: Sequence[Param], n_inputs: int, n_outputs: int) -> str:
    """Join the parameters the way MLX does, including its separator quirk.

    Inputs and metadata end in ``,``. An output ends in ``,`` when its buffer index is below
    ``n_inputs + n_outputs - 1`` or any attribute follows, else it closes the list with ``) {``.
    The bound ignores metadata buffers, so without attributes, with metadata and two or more
    outputs, MLX closes the list too early and the kernel does not compile; we keep that.
    """
    has_attributes = any(p.role == ParamRole.ATTRIBUTE for p in params)
    attributes = [p for p in params if p.role == ParamRole.ATTRIBUTE]
    text = ""
    for param in params:
        if param.role == ParamRole.OUTPUT:
            index = param.buffer_index
            assert index is not None  # outputs always sit in a buffer
            ends_list = not (index < n_inputs + n_outputs - 1 or has_attributes)
            text += param.text + (") {\n" if ends_list else ",\n")
        elif param.role == ParamRole.ATTRIBUTE:
            text += param.text + (") {\n" if param is attributes[-1] else ",\n")
        else:
            text += param.text + ",\n"
    return text


def build_signature(
    name: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    source: str,
    header: str,
    inputs: Sequence[InputDesc],
    output_dtypes: Sequence[str],
    template: Sequence[tuple[str, TemplateValue]],
    atomic_outputs: bool,
) -> GeneratedKernel:
    """Generate the kernel MLX 0.32 would build for one call.

    ``inputs[i]`` describes the array passed for ``input_names[i]`` (its ``name`` must match);
    template values are dtype names, ints or bools. Raises ValueError for what MLX rejects
    (no outputs, count mismatches, bad template values, dtypes Metal has no name for).
    """
    check_output_names(output_names)
    check_names(input_names, output_names)
    _check_count("inputs", len(inputs), len(input_names))
    _check_count("output_dtypes", len(output_dtypes), len(output_names))
    for expected, desc in zip(input_names, inputs, strict=True):
        if desc.name != expected:
            raise ValueError(f"input description {desc.name!r} given for input {expected!r}")

    kernel_name = mangle_kernel_name(name, template, inputs, output_dtypes)
    params: list[Param] = []
    for input_name, desc in zip(input_names, inputs, strict=True):
        params.extend(_input_params(input_name, desc, source, len(params)))
    for output_name, dtype in zip(output_names, output_dtypes, strict=True):
        params.append(_output_param(output_name, dtype, len(params), atomic_outputs))
    params.extend(_attribute_param(attr, type_text) for attr, type_text in used_attributes(source))

    template_line = template_declaration(template)
    signature = (
        template_line
        + f"[[kernel]] void {kernel_name}(\n"
        + _parameter_list_text(params, len(inputs), len(output_names))
    )
    instantiation = ""
    if template:
        instance = kernel_name + template_arguments(template)
        instantiation = (
            f'\ntemplate [[host_name("{kernel_name}")]] [[kernel]] '
            f"decltype({instance}) {instance};\n"
        )
    full_source = header + signature + source + "\n}\n" + instantiation
    return GeneratedKernel(
        kernel_name=kernel_name,
        params=tuple(params),
        template_line=template_line,
        full_source=full_source,
        signature=signature,
        instantiation_line=instantiation,
        source_offset=len(header) + len(signature),
    )


def verbose_text(name: str, kernel: GeneratedKernel) -> str:
    """What MLX prints for ``verbose=True``: a title with the user's kernel name, then the
    generated source inside a fenced block."""
    return f"Generated source code for `{name}`:\n```\n{kernel.full_source}\n```\n"
