"""Scalars the control flow reads by name, as a user writes them. DaCe compiles and runs each
program; a cutout of them must too, whatever stand-ins it needs:

* ``clip_below``: a read-only scalar argument in a branch condition (``if x[i] < lo``), inside
  a loop (DaCe 2.0 keeps the condition in a ``ConditionalBlock``);
* ``smooth_steps``: a time loop whose bound is a scalar argument (``range(1, TSTEPS)``, the
  condition of a ``LoopRegion`` on 2.0);
* ``flagged``: a scalar argument the program writes and then tests in a branch (a cutout must
  read it back, so it becomes a one-element array there, and the condition reads ``s[0]``);
* ``counted``: a scalar argument written, then the condition of a ``while`` loop (a
  ``LoopRegion`` on 2.0) and assignments on interstate edges.
"""
import dace

N = dace.symbol("N")


@dace.program
def clip_below(x: dace.float64[N], lo: dace.float64, y: dace.float64[N]):
    for i in range(N):
        if x[i] < lo:
            y[i] = lo
        else:
            y[i] = x[i] * 2.0


@dace.program
def smooth_steps(A: dace.float64[N], B: dace.float64[N], TSTEPS: dace.int64):
    for t in range(1, TSTEPS):
        for i in dace.map[1:N - 1]:
            B[i] = 0.25 * (A[i - 1] + 2.0 * A[i] + A[i + 1])
        for i in dace.map[1:N - 1]:
            A[i] = 0.25 * (B[i - 1] + 2.0 * B[i] + B[i + 1])


@dace.program
def flagged(x: dace.float64[N], y: dace.float64[N], s: dace.float64):
    s = x[0] * 2.0
    if s > 1.0:
        for i in dace.map[0:N]:
            y[i] = x[i] + s


@dace.program
def counted(x: dace.float64[N], y: dace.float64[N], s: dace.int64):
    s = N - 1
    for i in range(N - 1):
        y[i] = x[i]
    while s > 0:
        y[0] = y[0] + 1.0
        s = s - 2
