"""Which instance starts next: each queue gets its share of the workers' time."""
import random
import time
import types

from harnessgen.campaign.planning import AUDITS, MAIN, VARIANTS, WHOLE
from harnessgen.campaign import schedule
from harnessgen.campaign.schedule import Scheduler, estimate_seconds, median_walls


def rows(queue: str, n: int):
    return [{"id": f"{queue}-{i}", "spec": queue} for i in range(n)]


def test_cheap_instances_come_first_and_whole_programs_get_their_share():
    scheduler = Scheduler(lambda row: row["spec"], whole_share=0.25)
    scheduler.add(rows(WHOLE, 3) + rows(MAIN, 10))
    first = scheduler.next()
    assert first["id"] == "main-0"             # a tie: the main queue
    scheduler.spent[MAIN] = 3.0                 # as if main-0 had run 3 s
    scheduler.running.clear()
    assert scheduler.next()["id"] == "whole-0"  # whole has used none of its quarter
    scheduler.running.clear()
    scheduler.spent[WHOLE] = 3.0                # 3 s of a 0.25 share weighs as 12 s of main's 0.75 = 4
    picks = [scheduler.next(workers=4)["id"] for _ in range(2)]
    assert picks == ["main-1", "main-2"]


def test_running_instances_count_against_their_queue():
    scheduler = Scheduler(lambda row: row["spec"], whole_share=0.5)
    scheduler.add(rows(WHOLE, 2) + rows(MAIN, 2))
    scheduler.running["main-x"] = (MAIN, time.monotonic() - 100.0, MAIN, "")    # a long instance still running
    assert scheduler.next()["id"] == "whole-0"


def test_a_share_of_zero_runs_that_queue_only_when_nothing_else_is_left():
    scheduler = Scheduler(lambda row: row["spec"], whole_share=0.0)
    scheduler.add(rows(WHOLE, 1) + rows(MAIN, 2))
    assert [scheduler.next()["id"] for _ in range(3)] == ["main-0", "main-1", "whole-0"]


def test_requeued_instances_go_first():
    scheduler = Scheduler(lambda row: row["spec"])
    scheduler.add(rows(MAIN, 2))
    scheduler.add([{"id": "again", "spec": MAIN}], front=True)
    assert scheduler.next()["id"] == "again" and len(scheduler) == 2


def test_the_estimate_uses_each_transformations_median_and_the_overall_one_for_the_others():
    done = [{"spec": "A", "result": {"wall_seconds": w}} for w in (1.0, 2.0, 30.0)]
    done += [{"spec": "B", "result": {"wall_seconds": 10.0}}]
    pending = [{"spec": "A"}] * 4 + [{"spec": "C"}] * 2
    # A: median 2 s x 4; C (none done): the median of all four, 6 s, x 2; on two workers
    assert estimate_seconds(pending, done, workers=2) == (4 * 2.0 + 2 * 6.0) / 2
    assert estimate_seconds(pending, [], workers=2) is None
    assert estimate_seconds([], [], workers=1) == 0.0


def test_a_transformation_that_proves_slow_moves_to_the_expensive_queue():
    scheduler = Scheduler(lambda row: MAIN)
    scheduler.add([{"id": f"{spec}-{i}", "spec": spec} for i in range(3) for spec in ("fast", "slow")])
    for instance, wall in (("fast-0", 1.0), ("slow-0", 60.0)):
        scheduler.next()
        scheduler.running[instance] = (MAIN, time.monotonic() - wall, instance.split("-")[0], "")
        scheduler.finished(instance)
    assert scheduler.slow == ["slow"]
    assert [row["id"] for row in scheduler.queues[WHOLE]] == ["slow-1", "slow-2"]
    assert {row["spec"] for row in scheduler.queues[MAIN]} == {"fast"}


def test_a_queue_that_is_behind_catches_up_one_worker_at_a_time():
    """Whole-program instances run long: on two workers, one of them, never both, while cut-out
    instances wait."""
    scheduler = Scheduler(lambda row: row["spec"], whole_share=0.25)
    scheduler.add(rows(WHOLE, 3) + rows(MAIN, 5))
    scheduler.spent[MAIN] = 100.0                   # the main queue has run a long time already
    first = scheduler.next(workers=2)
    second = scheduler.next(workers=2)
    assert [first["spec"], second["spec"]] == [WHOLE, MAIN]
    scheduler.queues[MAIN].clear()                  # with nothing else to do, it may take them all
    assert scheduler.next(workers=2)["spec"] == WHOLE


def test_a_transformations_share_of_time_falls_as_its_instances_cost_more():
    """In plan order (interleaved) each transformation starts once; after that the one with the
    least time used times its instances' cost goes next: one whose instances cost four times as
    much gets a quarter of the time, so the cheap one judges sixteen for each of its."""
    scheduler = Scheduler(lambda row: MAIN)
    scheduler.add([{"id": f"{spec}-{i}", "spec": spec} for i in range(200) for spec in ("cheap", "dear")])
    walls = {"cheap": 1.0, "dear": 4.0}
    started = []
    for _ in range(102):
        row = scheduler.next()
        started.append(row["spec"])
        scheduler.running[row["id"]] = (MAIN, time.monotonic() - walls[row["spec"]], row["spec"], "")
        scheduler.finished(row["id"])
    assert started[:2] == ["cheap", "dear"]             # each starts once, in plan order
    assert (started.count("cheap"), started.count("dear")) == (96, 6)
    spent = {spec: started.count(spec) * wall for spec, wall in walls.items()}
    assert abs(spent["cheap"] / spent["dear"] - 4.0) < 0.2
    scheduler.add([{"id": "again", "spec": "dear"}], front=True)
    assert scheduler.next()["id"] == "again"            # put back in front: first, whatever its share


def test_a_run_that_continues_starts_with_the_transformations_that_were_quickest():
    """Where earlier runs finished instances, a tie (nothing spent yet) goes to the cheapest
    transformation by their median: the first verdicts come within seconds."""
    done = [{"spec": "dear", "result": {"wall_seconds": 40.0}}, {"spec": "cheap", "result": {"wall_seconds": 1.5}},
            {"spec": "cheap", "result": {"wall_seconds": 2.5}}]
    assert median_walls(done) == {"dear": 40.0, "cheap": 2.0}
    scheduler = Scheduler(lambda row: MAIN, expected=median_walls(done))
    scheduler.add([{"id": f"{spec}-{i}", "spec": spec} for i in range(3) for spec in ("dear", "new", "cheap")])
    assert [scheduler.next()["spec"] for _ in range(3)] == ["new", "cheap", "dear"]   # unknown: 0 s expected


def test_matches_come_first_then_audits_then_variants():
    """Variants and audits wait until no match is left, queued or still being enumerated."""
    scheduler = Scheduler(lambda row: row["spec"])
    scheduler.add(rows(VARIANTS, 2) + rows(AUDITS, 1) + rows(MAIN, 2))
    scheduler.matches_coming = True
    assert [scheduler.next()["id"] for _ in range(2)] == ["main-0", "main-1"]
    assert not scheduler.startable()            # the planner may still add matches
    scheduler.matches_coming = False
    assert [scheduler.next()["id"] for _ in range(3)] == ["audits-0", "variants-0", "variants-1"]


def test_a_variant_share_interleaves_variants_with_the_matches():
    scheduler = Scheduler(lambda row: row["spec"], variant_share=0.5)
    scheduler.add(rows(MAIN, 3) + rows(VARIANTS, 3))
    scheduler.spent[MAIN] = 10.0
    assert scheduler.next()["id"] == "variants-0"


def test_every_program_gets_its_turn():
    """A program with many matches planned first does not hold the workers: the program with
    the least time used goes next."""
    scheduler = Scheduler(lambda row: MAIN)
    big = [{"id": f"big-{i}", "spec": "X", "program": "big"} for i in range(50)]
    small = [{"id": f"small-{i}", "spec": "X", "program": "small"} for i in range(2)]
    scheduler.add(big + small)
    order = []
    for _ in range(4):
        row = scheduler.next()
        order.append(row["id"])
        scheduler.running[row["id"]] = (MAIN, time.monotonic() - 1.0, row["spec"], row["program"])
        scheduler.finished(row["id"])
    assert order[:2] == ["big-0", "small-0"] and "small-1" in order


def test_a_findings_audit_runs_beside_the_matches_within_its_share():
    """A finding's audit (put in front) may start while matches wait; a PASS's may not."""
    scheduler = Scheduler(lambda row: row["spec"])
    scheduler.add(rows(MAIN, 3))
    scheduler.add([{"id": "pass-audit", "spec": AUDITS}])
    scheduler.add([{"id": "finding-audit", "spec": AUDITS}], front=True)
    scheduler.spent[MAIN] = 10.0                 # the matches have had their time: the audit's turn
    assert scheduler.next(workers=2)["id"] == "finding-audit"
    assert [scheduler.next(workers=2)["id"] for _ in range(3)] == ["main-0", "main-1", "main-2"]
    assert scheduler.next(workers=2)["id"] == "pass-audit"


def test_a_findings_audit_waits_for_the_matches_when_the_bound_is_tight():
    scheduler = Scheduler(lambda row: row["spec"])
    scheduler.add(rows(MAIN, 2))
    scheduler.add([{"id": "finding-audit", "spec": AUDITS}], front=True)
    scheduler.spent[MAIN] = 10.0
    scheduler.audits_wait = True
    assert [scheduler.next(workers=2)["id"] for _ in range(3)] == ["main-0", "main-1", "finding-audit"]


def _reference_pick(scheduler, queue, now):
    """The next row as the scheduler's documentation defines it, by walking the whole queue."""
    rows = scheduler.queues[queue]
    if rows[0]["id"] in scheduler.urgent:
        return rows[0]
    used, program_used = dict(scheduler.spec_spent), dict(scheduler.program_spent)
    for q, started, spec, program in scheduler.running.values():
        used[(q, spec)] = used.get((q, spec), 0.0) + now - started
        program_used[(q, program)] = program_used.get((q, program), 0.0) + now - started
    firsts = {}
    for index, row in enumerate(rows):
        firsts.setdefault(row["program"], index)
    program = rows[min(firsts.values(), key=lambda i: (program_used.get((queue, rows[i]["program"]), 0.0), i))]["program"]
    of_spec = {}
    for index, row in enumerate(rows):
        if row["program"] == program:
            of_spec.setdefault(row["spec"], index)
    return rows[min(of_spec.values(), key=lambda i: (used.get((queue, rows[i]["spec"]), 0.0)
                                                      * scheduler._cost(queue, rows[i]["spec"]), i))]


def test_the_indexed_pick_is_the_documented_one(monkeypatch):
    """Each program's and transformation's first row is looked up, not walked to: the same
    instance comes next as walking the queue gives, through requeues and finishes."""
    clock = [1000.0]
    monkeypatch.setattr(schedule, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    rng = random.Random(7)
    scheduler = Scheduler(lambda row: MAIN)
    made = iter(range(10**6))

    def row():
        return {"id": f"r{next(made)}", "spec": rng.choice("ABCD"), "program": rng.choice(["p", "q", "r", "s"])}
    scheduler.add([row() for _ in range(300)])
    running = []
    for step in range(400):
        if rng.random() < 0.1:
            scheduler.add([row() for _ in range(rng.randint(1, 3))], front=rng.random() < 0.5)
        if running and rng.random() < 0.6:
            done = running.pop(rng.randrange(len(running)))
            q, _, spec, program = scheduler.running[done]
            scheduler.running[done] = (q, clock[0] - rng.uniform(0.1, 3.0), spec, program)
            scheduler.finished(done)
        if not scheduler.queues[MAIN]:
            break
        clock[0] += rng.uniform(0.0, 0.5)
        expected = _reference_pick(scheduler, MAIN, clock[0])
        picked = scheduler.next()
        assert picked is expected, step
        running.append(picked["id"])
    assert len(scheduler) == len(scheduler.queues[MAIN])
