"""What watches a run without changing it: the sanitizer (races, uninitialised reads, ...), the
access trace and the provenance of written values (for diagrams), and the step-through record
(for the explorer)."""
