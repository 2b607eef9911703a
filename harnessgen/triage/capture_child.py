"""The child process of ``localize``: run one side of a capture build on decoded inputs and
save every container it returns. Kept apart from ``localize`` so that it imports only the
replay path (0.4 s), not DaCe and the cutout stage (2.7 s): triage starts two per finding."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List

import numpy as np

from ..harness.replay import execute
from ..inputs.layout import DecodedInput


def main(argv: List[str]) -> int:
    build_dir, side, inputs, out, threads = argv
    result = execute(Path(build_dir), DecodedInput.from_npz(Path(inputs)), side, int(threads))
    with open(out, "wb") as fh:
        np.savez(fh, **result)
    print(json.dumps({"containers": len(result)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
