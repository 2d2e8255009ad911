"""Diagrams of a run: the run diagram (``draw``: layout and paint), where findings happened
(``marks``), the access map of segments and banks (``access_map``) and compact SVG text
(``svg_text``). They read run records; they import no checking, catalogue or widgets."""
