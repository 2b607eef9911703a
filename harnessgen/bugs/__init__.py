"""Stage ``bugs``: from findings to the bugs a compiler developer files.

``signature``: a root-cause signature per outcome kind (post's stack where it dies is
triage's, ``triage.stack``, taken as a crash is triaged); ``cluster``: every finding of one or several runs clustered into distinct bugs
(``bugs.json``); ``reduce``: each bug's program reduced while its signature persists;
``bug_report``: ``BUG.md`` per bug; ``builder``: a Python builder of a bug's program; ``analysis``: all of it for one or several runs.
"""

__all__ = ["analysis", "bug_report", "builder", "cluster", "reduce", "signature"]
