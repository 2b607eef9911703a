"""Output that goes to no terminal (a log, a pipe, CI) is read by scripts and copied from: a
line is never broken, a path is never split at 80 columns."""
from harnessgen.cli import render


def test_a_long_line_is_never_broken_where_the_output_is_no_terminal(capsys):
    console = render.console()
    assert not console.is_terminal          # pytest captures standard error
    path = "crashes/kernels/" + "/".join(["MapTiling-0123abcd"] * 12) + "/mismatch-B-0123abcd"
    console.print(f"  reproducer: {render.escape(path)}")
    said = capsys.readouterr().err
    assert said == f"  reproducer: {path}\n"
    assert console.width >= render.LOG_WIDTH
