"""The front end: kernel text to a checked syntax tree.

``preprocessor`` (directives and macros, over ``lexer`` tokens) -> ``parser`` (recursive
descent, building ``ast`` nodes) -> ``checker`` (names, types, implicit conversions made
explicit, templates instantiated; its results are the typed fields of the nodes and the
``symbols`` they resolve to). ``constexpr`` evaluates constant expressions for both.
"""
