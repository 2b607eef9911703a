"""``python -m harnessgen``: the same as the ``harnessgen`` console script."""
import sys

from .cli.commands import main

sys.exit(main())
