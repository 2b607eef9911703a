"""Stage ``bugs``: from findings to the bugs a compiler developer files.

``signature``: a root-cause signature per outcome kind; ``stack``: post's stack where it
dies; ``cluster``: every finding of one or several runs clustered into distinct bugs
(``bugs.json``); ``reduce``: each bug's program reduced while its signature persists;
``report``: ``BUG.md`` per bug; ``analysis``: all of it for one or several runs.
"""
