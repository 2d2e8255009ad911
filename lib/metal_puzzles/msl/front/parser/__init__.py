"""Recursive-descent parser for kernel bodies (statement lists) and headers (top-level
declarations: helper functions, templates, constant globals, type aliases).

One class, ``Parser``, made of parts that share the token cursor (``cursor.TokenCursor``):
``type_specs`` (types as written), ``expressions``, ``statements``, ``structs`` and
``declarations`` (the top level). A new construct goes in the part its grammar belongs to."""

from __future__ import annotations

from .declarations import Declarations
from .expressions import Expressions
from .statements import AliasStmt, Statements
from .structs import Structs
from .type_specs import TypeSpecs

__all__ = ["AliasStmt", "Parser"]


class Parser(Declarations, Structs, Statements, Expressions, TypeSpecs):
    """Parses a token list: ``parse_body`` for a kernel body, ``parse_translation_unit`` for a
    header, ``parse_top_level`` for one top-level item."""
