"""How the book is declared: an entry (a puzzle with its notebook lines and reference solution)
and a part (its heading and entries), and where the reference solutions' files are found."""
