"""A sweep on a `ray.cluster_utils.Cluster` (head + two worker nodes): trials spread over the
nodes, and removing a worker node mid-sweep still ends with every row present."""

from __future__ import annotations

import threading
import time

import pandas as pd
import pytest

from tests.helpers import sweeps as helpers
from tests.helpers.rendezvous import Rendezvous

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray


cluster = helpers.cluster  # the fixture: a head and two worker nodes


def rendezvous_synthetic(cfg):
    """`slow_synthetic` after its node checked in at the barrier and, for up to 120 s, trials
    ran on two nodes (a retried trial after the node loss passes straight through)."""
    barrier = ray.get_actor("spread_barrier")
    node = ray.get_runtime_context().get_node_id()
    deadline = time.monotonic() + 120
    while not ray.get(barrier.arrive.remote(node)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return helpers.slow_synthetic(cfg)


@pytest.fixture(autouse=True)
def _by_value():
    """This module's trial functions travel to the workers by value (they cannot import
    tests/)."""
    helpers.by_value(__name__)


def test_sweep_spreads_and_survives_a_lost_node(tmp_path, cluster):
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import load_spec
    from grokray.sweep.writer import run_plan

    c, workers = cluster
    spec = load_spec(helpers.tiny_spec(tmp_path, groups=("Z5", "Z7", "S3", "Z4"),
                                       concurrency=2))
    plan = make_plan(spec)
    # the first trials wait until trials run on both worker nodes (each has one CPU, so two
    # concurrent trials must be on two nodes): under load a node's first trial actor can take
    # longer to start than the other node needs for every trial, which made the spread a race.
    # The barrier lives on the head (a custom resource only it has): the node this test removes
    # must not take it along.
    barrier = Rendezvous.options(name="spread_barrier", resources={"head": 0.01}).remote(2)
    session = RaySession()  # joins the cluster's Ray, connected by the fixture
    executor = TuneExecutor(session, name="cluster", storage_path=str(tmp_path / "ray"),
                            concurrency=2, retries=3, trial_fn=rendezvous_synthetic)

    class Killer:
        """Removes the second worker node once three trials are written."""

        def __init__(self):
            self.n = 0
            self.thread = None
            self.error = None

        def started(self, config):
            pass

        def finished(self, outcome, result):
            self.n += 1
            if self.n == 3:
                self.thread = threading.Thread(target=self.remove)
                self.thread.start()

        def remove(self):
            try:
                c.remove_node(workers[1])
            except Exception as exc:  # noqa: BLE001 - reported by the test's assertion
                self.error = repr(exc)

    killer = Killer()
    with session:
        writer = run_plan(plan, executor, killer)
    # the node is gone before the fixture shuts the cluster down (the two at once fail)
    assert killer.thread is not None
    killer.thread.join(timeout=120)
    assert not killer.thread.is_alive() and killer.error is None, killer.error
    assert ray.get(barrier.seen.remote()) == 2
    nodes = {o.node_id for o in writer.outcomes if o.node_id}
    assert len(nodes) == 2, nodes  # both workers ran trials (the head has no CPUs)
    trials = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "tiny" / "trials")
                       .glob("*.parquet"))
    assert len(trials) == 4 * 2 * 2
    assert trials.groupby(["config_hash", "seed"]).size().eq(1).all()
    assert (trials["status"] == "grokked").all(), trials[trials["status"] != "grokked"][
        "error"].tolist()


def test_tune_packs_a_grid_and_writes_each_config_once(tmp_path, cluster):
    """On a joined cluster (Ray Tune) `pack` makes a Tune trial one pack: six float64 configs of
    one shape run as two packs of three (the configs of a pack share its wall time), and each
    config's outcome equals its trial run alone in this process."""
    from grokray.config import TrialConfig
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.session import RaySession
    from grokray.trial import run_trial

    base = {"group": "S3", "arch": "mlp", "device": "cpu", "dtype": "float64", "steps": 30,
            "eval_every": 10, "seeds": [0, 1], "model.d": 8, "model.hidden": 16,
            "metrics.patience": 0}
    cfgs = [TrialConfig.from_dict({**base, "optim.lr": lr, "optim.weight_decay": wd})
            for lr in (3e-3, 1e-2, 3e-2) for wd in (0.1, 1.0)]
    sink = helpers.Recorder()
    with RaySession() as session:
        TuneExecutor(session, name="packed", storage_path=str(tmp_path / "ray"), concurrency=2,
                     retries=1, pack=3).run(cfgs, sink)
    by = {o.config.config_hash(): o for o in sink.outcomes}
    assert len(sink.outcomes) == len(by) == 6
    assert len({round(o.wall_s, 9) for o in sink.outcomes}) == 2  # two packs of three
    for cfg in cfgs:
        got, alone = by[cfg.config_hash()].result, run_trial(cfg)
        assert [(s.status, s.grok_step, s.steps_run) for s in got.seeds] == \
            [(s.status, s.grok_step, s.steps_run) for s in alone.seeds]
        pd.testing.assert_frame_equal(got.curves[["train_loss", "val_loss"]],
                                      alone.curves[["train_loss", "val_loss"]], rtol=1e-10)


def test_tune_runs_a_lost_pack_again_one_config_a_trial():
    """The Tune executor's rounds: a pack whose worker was lost goes to the next Tuner.fit as
    one-config trials (packs of 1), so one bad config cannot fail the others (no Ray needed:
    the fit is replaced)."""
    from grokray.config import TrialConfig
    from grokray.sweep.executors.calls import WorkerCall
    from grokray.sweep.executors.tune import TuneExecutor

    class Session:
        class warm:  # noqa: N801 - the session's WarmWorkers, as the executor uses them
            @staticmethod
            def release():
                pass

        @staticmethod
        def check_resources(cpu, gpu):
            pass

    cfgs = [TrialConfig.from_dict({"group": "S3", "optim.lr": lr}) for lr in (1e-3, 2e-3, 3e-3)]
    fits = []

    def fake_fit(calls, search, sink):
        fits.append([(len(c.configs), c.packed) for c in calls])
        return [(calls[0], None, "worker died")] if len(fits) == 1 else []

    ex = TuneExecutor(Session(), name="x", storage_path="/nonexistent", retries=1, pack=3)
    ex._fit = fake_fit
    ex._rounds([WorkerCall(cfgs, packed=True)], None, helpers.Recorder())
    assert fits == [[(3, True)], [(1, False), (1, False), (1, False)]]
