"""The service's scheduler: priorities, fair share, quotas, dispatch and preemption, on plain
data (grokray.service.scheduler)."""

import pytest

from grokray.service.scheduler import (
    Charge,
    Grant,
    Policy,
    Quota,
    Resources,
    Running,
    Sweep,
    Usage,
    check_quota,
    decayed,
    decide,
    queue_order,
    share_scores,
)

CPU1 = Resources(cpu=1)
DAY = 86400.0


def sweep(id, user, priority=0, submitted=0.0, trials=4, per=CPU1, conc=None, cpu_s=100.0):
    return Sweep(id=id, user=user, priority=priority, submitted=submitted, per_trial=per,
                 trials_left=trials, concurrency=conc, expected=Usage(cpu_s=cpu_s))


def test_priority_orders_the_queue_before_submission_time():
    q = [sweep("a", "u", 0, 1), sweep("b", "v", 5, 2), sweep("c", "w", 1, 0)]
    assert [s.id for s in queue_order(q, {}, Policy())] == ["b", "c", "a"]


def test_equal_priority_users_alternate_by_fair_share():
    # bob submitted both of his first; carol's come later; equal priority: they alternate
    q = [sweep("b1", "bob", 1, 1), sweep("b2", "bob", 1, 2),
         sweep("c1", "carol", 1, 3), sweep("c2", "carol", 1, 4)]
    assert [s.id for s in queue_order(q, {}, Policy())] == ["b1", "c1", "b2", "c2"]
    # carol has used more recently: she comes second in each pair
    assert [s.id for s in queue_order(q, {"carol": 50.0}, Policy())] == ["b1", "c1", "b2", "c2"]
    assert [s.id for s in queue_order(q, {"bob": 150.0}, Policy())] == ["c1", "c2", "b1", "b2"]


def test_usage_decays_by_half_life_and_gpu_seconds_weigh_more():
    p = Policy(half_life_s=DAY, gpu_weight=8)
    charges = [Charge("bob", 0.0, Usage(cpu_s=100)), Charge("bob", DAY, Usage(gpu_s=10)),
               Charge("carol", 2 * DAY, Usage(cpu_s=40))]
    got = decayed(charges, 2 * DAY, p)
    assert got["bob"] == pytest.approx(100 * 0.25 + 80 * 0.5)
    assert got["carol"] == pytest.approx(40.0)


def test_running_sweeps_count_their_expected_usage_still_to_come():
    r = Running(sweep("b1", "bob", cpu_s=300), slots=1, started=0, used=Usage(cpu_s=100))
    stopping = Running(sweep("c1", "carol", cpu_s=300), slots=1, started=0, stopping=True)
    got = share_scores([Charge("bob", 0, Usage(cpu_s=100))], [r, stopping], 0, Policy())
    assert got == {"bob": pytest.approx(100 + 200)}


def test_dispatch_grants_slots_as_far_as_free_resources_allow():
    q = [sweep("a", "u", 2, 0, trials=3), sweep("b", "v", 1, 1, trials=5, conc=2),
         sweep("c", "w", 0, 2, trials=4)]
    d = decide(q, [], Resources(cpu=4), [], 0)
    assert d.start == [Grant("a", 3), Grant("b", 1)]
    assert d.preempt == []
    assert d.why["c"] == "waits for free resources"
    # GPUs limit too: two GPU trials on one GPU, a CPU sweep beside them
    gpu = Resources(cpu=1, gpu=0.5)
    d = decide([sweep("g", "u", 0, 0, per=gpu), sweep("c", "v", 0, 1)], [],
               Resources(cpu=8, gpu=1), [], 0)
    assert d.start == [Grant("g", 2), Grant("c", 4)]


def test_a_trial_larger_than_the_cluster_is_said_so():
    d = decide([sweep("g", "u", per=Resources(cpu=1, gpu=1))], [], Resources(cpu=4), [], 0)
    assert d.start == [] and "the cluster has cpu 4 gpu 0" in d.why["g"]


def test_higher_priority_preempts_the_lowest_priority_latest_started():
    running = [Running(sweep("low_old", "u", 0), 1, started=1),
               Running(sweep("low_new", "v", 0), 1, started=5),
               Running(sweep("mid", "w", 1), 1, started=0)]
    d = decide([sweep("high", "x", 2, 9, trials=1)], running, Resources(cpu=3), [], 10)
    assert d.start == [] and d.preempt == ["low_new"]
    assert "low_new" in d.why["high"] and "checkpoint" in d.why["high"]
    # once low_new is stopping, the next pass asks for nothing more and starts nothing
    running[1] = Running(running[1].sweep, 1, started=5, stopping=True)
    d = decide([sweep("high", "x", 2, 9, trials=1)], running, Resources(cpu=3), [], 11)
    assert d.start == [] and d.preempt == []
    # when it has stopped, high starts
    d = decide([sweep("high", "x", 2, 9, trials=1)], [running[0], running[2]],
               Resources(cpu=3), [], 12)
    assert d.start == [Grant("high", 1)]


def test_preemption_takes_as_many_as_the_waiting_sweep_wants_lowest_first():
    running = [Running(sweep("p0", "u", 0), 2, started=1),
               Running(sweep("p1", "v", 1), 2, started=2)]
    d = decide([sweep("high", "x", 5, 9, trials=3)], running, Resources(cpu=4), [], 10)
    assert d.preempt == ["p0", "p1"]
    d = decide([sweep("high", "x", 5, 9, trials=2)], running, Resources(cpu=4), [], 10)
    assert d.preempt == ["p0"]


def test_equal_priority_never_preempts_and_a_blocked_sweep_reserves_its_slots():
    running = [Running(sweep("r", "u", 1), 2, started=0)]
    q = [sweep("same", "v", 1, 1, trials=2), sweep("low", "w", 0, 2, trials=1)]
    d = decide(q, running, Resources(cpu=3), [], 0)
    # "same" gets the one free slot; nothing preempted
    assert d.start == [Grant("same", 1)] and d.preempt == []
    # a blocked sweep keeps lower ones off the slots it waits for
    q = [sweep("big", "v", 1, 1, trials=1, per=Resources(cpu=2)), sweep("low", "w", 0, 2)]
    d = decide(q, running, Resources(cpu=3), [], 0)
    assert d.start == [] and d.preempt == []
    assert d.why == {"big": "waits for free resources", "low": "waits for free resources"}


def test_quota_refuses_with_how_much_or_holds():
    est = Usage(cpu_s=2 * 3600)
    ok = check_quota("bob", est, Usage(cpu_s=3600), Usage(), Quota(cpu_h=5))
    assert ok == ("admit", "")
    verdict, line = check_quota("bob", est, Usage(cpu_s=3 * 3600), Usage(cpu_s=3600),
                                Quota(cpu_h=5))
    assert verdict == "refuse"
    assert line == ("sweep refused: bob over quota by 1 CPU-hours (quota 5 h; used 3, queued "
                    "and running 1, this sweep 2 expected) over the last 30 days")
    verdict, line = check_quota("bob", Usage(gpu_s=1800), Usage(), Usage(), Quota(gpu_h=0.25),
                                Policy(over_quota="hold"))
    assert verdict == "hold" and line.startswith("sweep held: bob over quota by 0.25 GPU-hours")
    assert check_quota("bob", est, Usage(), Usage(), None) == ("admit", "")


def test_policy_refuses_bad_settings():
    with pytest.raises(ValueError, match="valid: refuse, hold"):
        Policy(over_quota="drop")
    with pytest.raises(ValueError, match="valid: expected, upper"):
        Policy(price="median")


def test_three_users_scenario_on_one_slot():
    """The three-user test's schedule on plain data: carol's low sweep runs, alice's high one
    preempts it, then bob and carol alternate, then carol's low one resumes."""
    cap = Resources(cpu=1)
    low = sweep("L", "carol", 0, 0, trials=2)
    t = 1.0
    d = decide([low], [], cap, [], t)
    assert d.start == [Grant("L", 1)]
    running = [Running(low, 1, started=t, used=Usage(cpu_s=30))]
    queued = [sweep("H", "alice", 2, 2), sweep("B1", "bob", 1, 3), sweep("B2", "bob", 1, 4),
              sweep("C1", "carol", 1, 5), sweep("C2", "carol", 1, 6)]
    d = decide(queued, running, cap, [Charge("carol", t, Usage(cpu_s=30))], 7)
    assert d.preempt == ["L"] and d.start == []
    charges = [Charge("carol", t, Usage(cpu_s=30))]
    queued.append(low)
    started = []
    for now in range(8, 14):
        d = decide(queued, [], cap, charges, now)
        (g,) = d.start
        s = next(s for s in queued if s.id == g.id)
        started.append(s.id)
        queued.remove(s)
        charges.append(Charge(s.user, now, s.expected))
    assert started == ["H", "B1", "C1", "B2", "C2", "L"]
