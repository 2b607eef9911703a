"""``python -m harnessgen``: the same as the ``harnessgen`` console script."""
import sys

from .cli import main

sys.exit(main())
