"""Leftovers of dead processes are cleared; those of living ones are not touched."""
import os

from harnessgen.core.files import clear_stale_omp_registrations


def test_only_registrations_of_processes_that_are_gone_are_removed(tmp_path):
    dead = 4194304 + 1          # above any pid_max: no such process
    stale = tmp_path / f"__KMP_REGISTERED_LIB_{dead}_0"
    stale.write_bytes(b"")      # empty: what makes a new process with this pid die of SIGBUS
    alive = tmp_path / f"__KMP_REGISTERED_LIB_{os.getpid()}_0"
    alive.write_bytes(b"0x1-cafe-libomp.so.5")
    other = tmp_path / "unrelated"
    other.write_bytes(b"")
    assert clear_stale_omp_registrations(tmp_path) == 1
    assert not stale.exists() and alive.exists() and other.exists()
