"""Which pending instance a free worker takes next, and how long the rest would take.

Instances come in queues (``planning.MAIN``: cut-out instances, cheap; ``planning.WHOLE``:
instances judged on whole programs, such as passes, often a minute each, and the instances of
any transformation whose finished instances turn out that slow; ``planning.VARIANTS``:
parameter variants of the matches, beyond their defaults; ``planning.AUDITS``: the
whole-program audits a bounded run leaves until every match has its verdict).

**Matches first.** The matches (MAIN and WHOLE) come before everything else: the audits of
PASS verdicts start only once no match is left to judge or to enumerate, and parameter
variants after the audits (unless ``variant_share`` gives them a share of their own,
interleaved with the matches). A finding's audit, which says whether DaCe alone shows the
bug, runs beside the matches within ``FINDING_AUDIT_SHARE`` of the workers' time, unless the
bound is tight (``audits_wait``: judging the queued matches would take what the bound has
left): then it waits for the matches too. A bound thus gives every match its verdict before it
spends anything on audits or variants.

Between MAIN and WHOLE each queue is promised a share of the workers' time; the next
instance comes from the queue that has used the least of its share so far (finished
instances' seconds plus the running ones' so far), the main queue first on a tie. A
budget-bound run thus spends most of its time where verdicts come quickly and still judges
the expensive instances, interleaved from the start.

**Every program in turn.** Within a queue the next instance comes from the program with the
least time used so far in it (plan order on a tie): one program's large plan (NPBench's vadv,
947 matches) never starves another's.

Within a program a transformation's share of the time is inversely proportional to what its
instances cost: the next instance is the first pending one of the transformation with the
least time used so far times the median seconds of its finished instances (in this run, else
in earlier runs; plan order on a tie, or the transformation whose finished instances of
earlier runs were quickest: a run that continues gives its first verdicts within seconds, so
every transformation starts early). A transformation whose instances take two seconds thus
gets ten times the time of one whose instances take twenty, and judges a hundred for each
one of the slow one, which still judges its share from the start instead of waiting behind
the cheap ones. Instances put back in front (requeued after a lost worker) go first.
"""
from __future__ import annotations

import bisect
import collections
import itertools
import statistics
import time
from typing import Callable, Dict, List, Optional

from ..core.errors import InternalError
from .planning import AUDITS, MAIN, MATCHES, QUEUES, VARIANTS, WHOLE

DEFAULT_WHOLE_SHARE = 0.25
# variants after every match and audit; a share above zero interleaves them with the matches
DEFAULT_VARIANT_SHARE = 0.0
# of the workers' time, for findings' audits beside the matches (the audits of PASS verdicts wait)
FINDING_AUDIT_SHARE = 0.1
# a transformation is moved to the expensive queue when its finished instances took this long
# (median) and this many times the median of the other transformations' instances
SLOW_SECONDS = 20.0
SLOW_FACTOR = 8.0
# a transformation's instances are taken to cost at least this much (seconds) when shares are weighed
MIN_COST = 0.5


class Scheduler:
    def __init__(self, queue_of: Callable[[Dict], str], whole_share: float = DEFAULT_WHOLE_SHARE,
                 variant_share: float = DEFAULT_VARIANT_SHARE, expected: Optional[Dict[str, float]] = None):
        self.queue_of = queue_of
        self.expected = expected or {}               # spec -> median wall seconds of earlier runs
        whole = min(max(whole_share, 0.0), 1.0)
        variants = min(max(variant_share, 0.0), 1.0 - whole)
        self.shares = {MAIN: 1.0 - whole - variants, VARIANTS: variants, WHOLE: whole, AUDITS: FINDING_AUDIT_SHARE}
        self.queues: Dict[str, List[Dict]] = {q: [] for q in QUEUES}
        self.spent: Dict[str, float] = {q: 0.0 for q in QUEUES}
        self.running: Dict[str, tuple] = {}          # id -> (queue, started, spec, program)
        self.slow: List[str] = []                    # specs moved to the expensive queue, in order
        self.spec_spent: Dict[tuple, float] = {}     # (queue, spec) -> seconds of its finished instances
        self.program_spent: Dict[tuple, float] = {}  # (queue, program) -> seconds of its finished instances
        self.spec_walls: Dict[tuple, List[float]] = {}  # (queue, spec) -> wall seconds of each finished one
        self.orders: Dict[str, "_QueueOrder"] = {}   # queue -> its rows by program and transformation
        self._medians: Dict[object, Optional[float]] = {}  # (queue, spec) or queue -> median of its walls, kept
        self.urgent: set = set()                     # ids put back in front
        # matches are still being enumerated beside the run (the feed says so): what comes after
        # the matches waits for them
        self.matches_coming = False
        # the bound has no room for audits beside the matches (the driver says so): a finding's
        # audit waits for the matches as a PASS's does
        self.audits_wait = False

    def add(self, rows: List[Dict], front: bool = False) -> None:
        for row in (reversed(rows) if front else rows):
            name = self.queue_of(row)
            order = self._order(name)
            if front:
                self.queues[name].insert(0, row)
                self.urgent.add(row["id"])
            else:
                self.queues[name].append(row)
            order.add(row, front)

    def _order(self, queue: str) -> "_QueueOrder":
        """``queue``'s rows by program and transformation, made again from the queue where it
        changed behind the scheduler's back (a caller that cleared it)."""
        order = self.orders.get(queue)
        if order is None or len(order) != len(self.queues[queue]):
            order = self.orders[queue] = _QueueOrder(self.queues[queue])
        return order

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def __bool__(self) -> bool:
        return len(self) > 0

    def _used(self, queue: str, now: float) -> float:
        running = sum(now - started for q, started, _, _ in self.running.values() if q == queue)
        return (self.spent[queue] + running) / self.shares[queue] if self.shares[queue] > 0 else float("inf")

    def queued_matches(self) -> int:
        return sum(len(self.queues[q]) for q in MATCHES)

    def queued_in_phase(self) -> int:
        """The instances still queued in the phase under way: the matches while any is left,
        then the variants (audits have no time of their own to share)."""
        matches = self.queued_matches()
        return matches if matches or self.matches_coming else len(self.queues[VARIANTS])

    def startable(self) -> bool:
        """Whether an instance may start now (one is queued and nothing it waits for is left)."""
        return bool(self._candidates())

    def _candidates(self) -> List[str]:
        """The queues an instance may come from now: the matches first; the audits once no match
        is left (queued or still being enumerated); variants without a share of their own after
        the audits."""
        matches_left = self.matches_coming or any(self.queues[q] for q in MATCHES)
        audits = self.queues[AUDITS]
        # a finding's audit (put in front) may run beside the matches, within its share: it says
        # whether DaCe alone shows the bug, unless the bound is tight; a PASS's waits for every match
        audits_now = bool(audits) and (not matches_left or (audits[0]["id"] in self.urgent and not self.audits_wait))
        queued = [q for q in QUEUES if self.queues[q] and (q != AUDITS or audits_now)]
        if matches_left or audits:
            queued = [q for q in queued if q != VARIANTS or self.shares[VARIANTS] > 0]
        return queued

    def next(self, workers: int = 1) -> Dict:
        """The next instance to start (``startable()`` must be true), for a pool of ``workers``.
        A queue never holds more workers at once than its share of them (at least one) while
        another queue has work: a queue that is behind catches up one worker at a time instead
        of taking every worker for its long instances."""
        now = time.monotonic()
        candidates = self._candidates()
        if len(candidates) > 1 and all(self.shares[q] == 0 for q in candidates):
            candidates = candidates[:1]
        if len(candidates) > 1:
            room = [q for q in candidates if self._running(q) < self._workers_for(q, workers)]
            candidates = room or candidates
        queue = min(candidates, key=lambda q: (self._used(q, now), QUEUES.index(q)))
        row = self._pick(queue, now)
        self.queues[queue].pop(self._order(queue).take(self.queues[queue], row))
        self.urgent.discard(row["id"])
        self.running[row["id"]] = (queue, now, row["spec"], _program(row))
        return row

    def _pick(self, queue: str, now: float) -> Dict:
        """The next instance of ``queue``: one put back in front, else, in the program with the
        least time used in the queue, the first of the transformation with the least time used
        times the cost of its instances (each program's and transformation's first row is
        looked up, never the queue walked: 7,000 rows took 15 ms a pick, a worker's wait)."""
        rows = self.queues[queue]
        if rows[0]["id"] in self.urgent:
            return rows[0]
        order = self._order(queue)
        used = dict(self.spec_spent)
        program_used = dict(self.program_spent)
        for q, started, spec, program in self.running.values():
            used[(q, spec)] = used.get((q, spec), 0.0) + now - started
            program_used[(q, program)] = program_used.get((q, program), 0.0) + now - started
        program = min(order.programs(), key=lambda p: (program_used.get((queue, p), 0.0), order.first_of_program(p)))
        firsts = order.first_of_each_spec(program)

        def weighed(spec: str) -> tuple:
            return (used.get((queue, spec), 0.0) * self._cost(queue, spec), self.expected.get(spec, 0.0), firsts[spec][0])
        return firsts[min(firsts, key=weighed)][1]

    def _cost(self, queue: str, spec: str) -> float:
        """What an instance of ``spec`` in ``queue`` is expected to take: the median of its
        finished ones in this run, else in earlier runs, else of the queue's finished ones."""
        if (queue, spec) in self.spec_walls:
            cost = self._spec_median(queue, spec)
        elif spec in self.expected:
            cost = self.expected[spec]
        else:
            everything = self._median(queue, lambda: [w for (q, _), values in self.spec_walls.items() if q == queue
                                                      for w in values])
            cost = everything if everything is not None else MIN_COST
        return max(cost, MIN_COST)

    def _spec_median(self, queue: str, spec: str) -> float:
        """The median wall seconds of ``spec``'s finished instances in ``queue`` (one at least)."""
        return self._median((queue, spec), lambda: self.spec_walls[(queue, spec)])

    def _median(self, key, walls: Callable[[], List[float]]) -> Optional[float]:
        """The median of ``walls()``, kept until an instance of ``key`` finishes."""
        if key not in self._medians:
            values = walls()
            self._medians[key] = statistics.median(values) if values else None
        return self._medians[key]

    def _workers_for(self, queue: str, workers: int) -> int:
        """A queue's share of the workers: at least one where its share is not zero."""
        share = self.shares[queue]
        return max(1, round(share * workers)) if share > 0 else 0

    def _running(self, queue: str) -> int:
        return sum(1 for q, _, _, _ in self.running.values() if q == queue)

    def finished(self, instance_id: str) -> None:
        queue, started, spec, program = self.running.pop(instance_id, (MAIN, time.monotonic(), "", ""))
        wall = time.monotonic() - started
        self.spent[queue] += wall
        self.spec_spent[(queue, spec)] = self.spec_spent.get((queue, spec), 0.0) + wall
        self.program_spent[(queue, program)] = self.program_spent.get((queue, program), 0.0) + wall
        self.spec_walls.setdefault((queue, spec), []).append(wall)
        self._medians.pop((queue, spec), None)
        self._medians.pop(queue, None)
        if queue == MAIN and spec:
            self._move_if_slow(spec)

    def _move_if_slow(self, spec: str) -> None:
        """A transformation whose instances prove slow goes on in the expensive queue: it keeps
        its share there instead of holding the main queue's workers."""
        own = self._spec_median(MAIN, spec)
        if spec in self.slow or own < SLOW_SECONDS:
            return
        others = [w for (queue, name), walls in self.spec_walls.items()
                  if queue == MAIN and name and name != spec for w in walls]
        if not others or own < SLOW_FACTOR * statistics.median(others):
            return
        moving = [row for row in self.queues[MAIN] if row["spec"] == spec]
        self.queues[MAIN] = [row for row in self.queues[MAIN] if row["spec"] != spec]
        self.queues[WHOLE] += moving
        self.orders.pop(MAIN, None)
        self.orders.pop(WHOLE, None)
        self.slow.append(spec)

    def clear(self) -> None:
        for queue in self.queues.values():
            queue.clear()
        self.orders.clear()


class _QueueOrder:
    """One queue's rows by program and by transformation within it, each in queue order, with
    a sequence number each that grows along the queue (rows put in front get ones below every
    other): the first row of a program or of a transformation is a look-up."""

    def __init__(self, rows: List[Dict]):
        self.rows: Dict[str, Dict[str, collections.deque]] = {}   # program -> spec -> deque of (seq, row)
        self.seq: Dict[int, int] = {}                               # id(row) -> its sequence number
        self.back = itertools.count()
        self.front = itertools.count(-1, -1)
        for row in rows:
            self.add(row, front=False)

    def __len__(self) -> int:
        return len(self.seq)

    def add(self, row: Dict, front: bool) -> None:
        seq = next(self.front if front else self.back)
        self.seq[id(row)] = seq
        runs = self.rows.setdefault(_program(row), {}).setdefault(row["spec"], collections.deque())
        if front:
            runs.appendleft((seq, row))
        else:
            runs.append((seq, row))

    def take(self, rows: List[Dict], row: Dict) -> int:
        """Take out ``row``, the first of its program's rows of its transformation: its index
        in ``rows``, the queue (in sequence order), for the caller to pop."""
        program, spec = _program(row), row["spec"]
        runs = self.rows[program][spec]
        seq, first = runs.popleft()
        if first is not row:
            raise InternalError(f"the scheduler took {row['id']}, not the first of its transformation")
        if not runs:
            del self.rows[program][spec]
            if not self.rows[program]:
                del self.rows[program]
        del self.seq[id(row)]
        index = bisect.bisect_left(rows, seq, key=lambda r: self.seq.get(id(r), seq))
        if index < len(rows) and rows[index] is row:
            return index
        raise InternalError(f"the scheduler's order of its queue lost {row['id']}")

    def programs(self) -> List[str]:
        return list(self.rows)

    def first_of_program(self, program: str) -> int:
        return min(runs[0][0] for runs in self.rows[program].values())

    def first_of_each_spec(self, program: str) -> Dict[str, tuple]:
        """Each transformation's first (sequence number, row) in ``program``."""
        return {spec: runs[0] for spec, runs in self.rows[program].items()}


def _program(row: Dict) -> str:
    """The program an instance row lies in ("" where the row does not say)."""
    return row.get("program") or (row.get("instance") or {}).get("program") or ""


def estimate_seconds(pending: List[Dict], done: List[Dict], workers: int) -> Optional[float]:
    """How long the ``pending`` instance rows would take on ``workers`` workers, from the wall
    time of the ``done`` ones (rows with their ``result``): per transformation where it has
    finished instances, else the median of all. None when nothing has finished yet."""
    walls = _walls(done)
    everything = [w for values in walls.values() for w in values]
    if not everything and pending:
        return None
    overall = statistics.median(everything) if everything else 0.0
    total = sum(statistics.median(walls[row["spec"]]) if row["spec"] in walls else overall for row in pending)
    return total / max(1, workers)


def median_walls(done: List[Dict]) -> Dict[str, float]:
    """Per transformation, the median wall seconds of the ``done`` instance rows."""
    return {spec: statistics.median(values) for spec, values in _walls(done).items()}


def _walls(done: List[Dict]) -> Dict[str, List[float]]:
    walls: Dict[str, List[float]] = {}
    for row in done:
        result = row.get("result") or {}
        if result.get("wall_seconds") is not None:
            walls.setdefault(row["spec"], []).append(float(result["wall_seconds"]))
    return walls
