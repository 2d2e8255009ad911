"""What a run reports besides its outputs, as a concept of its own: each finding and its kind
(``finding``), the registry of what each kind says and how diagrams mark it (``registry``), the
advice a finding carries about its cause and fix (``advice``), and the modes that decide what
happens to findings and when a run stops (``modes``). The executor and the sanitizer make findings;
the run record, the verdicts and the diagrams read them."""
