"""The one progress display (grokray.sweep.progress): the count display `grokray recompute`
shows, and the sweep display as a subscriber of the driver's events."""

from __future__ import annotations

import io

from grokray.sweep.progress import CountDisplay, Display, DisplaySubscriber


def test_count_display_lines():
    out = io.StringIO()
    with CountDisplay(5, 2, title="recompute", unit="values", live=False, stream=out) as d:
        d.step(2, "x seed 0")
        d.item_done("sweep abc: 2 value(s) in 0.1s")
        d.less(1)
        d.step(2, "y seed 0")
        d.item_done("sweep def: 2 value(s) in 0.2s")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("[1/2] sweep abc: 2 value(s) in 0.1s | 2/5 values, elapsed ")
    assert lines[1].startswith("[2/2] sweep def: 2 value(s) in 0.2s | 4/4 values, elapsed ")
    assert lines[1].endswith("ETA 0s")
    assert (d.done, d.total, d.items_done) == (4, 4, 2)


def test_nothing_to_count_shows_no_bar():
    d = CountDisplay(0, 0, title="recompute", unit="values", live=True, stream=io.StringIO())
    assert d.live is False


def test_the_sweep_display_is_a_subscriber(tmp_path):
    from grokray.sweep.driver import SweepDriver
    from grokray.sweep.spec import parse_spec

    spec = parse_spec(f"name: p\nout: {tmp_path}\nconfig: {{group: Z5, arch: mlp, device: cpu, "
                      "eval_every: 50, model: {hidden: 8, d: 8}}\naxes: {optim.lr: [0.001, "
                      "0.002]}\nseeds: 1\nsteps: 100\n", "p.yaml")
    out = io.StringIO()
    sub = DisplaySubscriber(plain=True, stream=out)
    driver = SweepDriver(spec)
    driver.subscribe(sub)
    seen: list = []
    driver.subscribe(lambda e: seen.append(sub.display))
    assert driver.run().state == "done"
    assert isinstance(seen[0], Display) and sub.display is None  # from start to end
    lines = out.getvalue().splitlines()
    assert [ln.split("]")[0] for ln in lines] == ["[1/2", "[2/2"]
    assert "optim.lr=0.001" in lines[0] and "done 2, running 0, failed 0, pending 0" in lines[1]
