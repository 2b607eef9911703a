"""Names harnessgen gives the containers it adds to a cutout, owned here: the cutout makes
them (``cutout.extract``) and the input constraints recognise them (``inputs.constraints``),
and neither stage may import the other's heavy dependencies for a string."""
from __future__ import annotations

# a symbol the cutout assigns and its program reads after it: its value where the cutout
# starts enters in ``hg_sym_<symbol>``, and where it ends leaves in ``hg_symout_<symbol>``
SYMBOL_INPUT_PREFIX = "hg_sym_"
SYMBOL_OUTPUT_PREFIX = "hg_symout_"

# where a static finding (it has no meta.json) keeps what later stages learnt of it
JUDGED_FILE = "judged.json"
