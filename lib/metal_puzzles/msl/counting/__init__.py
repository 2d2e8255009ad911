"""What a run counts, and by what kind: each memory access by what it does (``access_kind``: read,
write, atomic update) into the per-thread counters a learner's budget limits and the score table
shows (``counters``), and each arithmetic operation by its cost class (``op_kinds``: the rows of
the GPU throughput tables the cost model reads). The executor counts by these; the run record, the
cost model, the budgets and the diagrams read them."""
