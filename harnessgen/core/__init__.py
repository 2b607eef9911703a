"""What every stage uses, and nothing of any stage: errors, atomic files, child processes,
environment knobs, the run"s warning log, verdicts (``outcome``), the data folders and the one
template environment (``data``), bound expressions, versions and interpreters, the harness
binary"s protocol and the standalone runtime, and the records passed between the driver and
the stages (``records``: FuzzOptions, InstanceResult; ``evidence``: what a PASS rests on).
"""

__all__ = ["data", "envs", "errors", "evidence", "expr", "files", "outcome", "procs", "protocol", "pythons", "records", "runlog", "runtime", "sdfg_edit", "versions"]
