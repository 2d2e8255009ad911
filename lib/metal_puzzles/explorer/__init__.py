"""The interactive kernel explorer: its widgets (``widgets``), the model they show (``model``:
threads, steps and accesses of one run record) and what it adds to the page (``page``: style
sheet, keyboard guard, cell clicks, the diagram redrawn in place)."""
