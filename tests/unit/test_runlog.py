"""Library warnings go to the run's log, counted, not to the terminal (unless asked)."""
import os
import warnings

from harnessgen.core import runlog


def _warn_twice():
    warnings.warn("Cannot find appropriate memlet pattern\nto propagate i through 0:N", UserWarning)
    warnings.warn("Transient B is not initialized", UserWarning)


def test_warnings_are_logged_one_line_each_and_counted_not_shown(tmp_path, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with runlog.captured_warnings(tmp_path) as log:
            _warn_twice()
    assert capsys.readouterr().err == ""
    lines = log.read_text().splitlines()
    assert len(lines) == 2 == runlog.count(tmp_path)
    assert lines[0].startswith("UserWarning: Cannot find appropriate memlet pattern to propagate i through 0:N (")
    assert runlog.count(tmp_path / "elsewhere") == 0


def test_verbose_shows_them_as_well_and_the_hook_is_restored(tmp_path):
    shown = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *rest, **kw: shown.append(str(message))
        before = warnings.showwarning
        with runlog.captured_warnings(tmp_path, echo=True):
            _warn_twice()
        assert warnings.showwarning is before
    assert shown[1] == "Transient B is not initialized" and len(shown) == 2 == runlog.count(tmp_path)


def test_forked_workers_append_to_the_same_log(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with runlog.captured_warnings(tmp_path):
            pids = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    _warn_twice()
                    os._exit(0)
                pids.append(pid)
            for pid in pids:
                os.waitpid(pid, 0)
    assert runlog.count(tmp_path) == 6
