"""The service's queue and accounting pages in a real browser (Debian's chromium driven by
Playwright), over the service's real HTTP API: the queue page shows each sweep's columns and
follows the queue live (a submission and a state change appear without a reload); the
accounting page shows hours used, estimated and saved per user and per sweep, as the
accounting module computes them; a page without a token says so.

Skipped, with the reason, only where no Chromium binary or no Playwright is installed."""

from __future__ import annotations

import pytest

from tests.helpers.service import in_thread
from tests.integration import test_dashboard_browser

browser = test_dashboard_browser.browser
"""the dashboard test's Chromium (skipped, with the reason, where there is none)"""


@pytest.fixture()
def lab(tmp_path):
    """A service with two users, three sweeps (one done with a reused row) and their usage."""
    with in_thread(str(tmp_path / "s.db"), str(tmp_path / "store")) as (url, st):
        alice, token = st.add_user("alice")
        bob, _ = st.add_user("bob")
        a, _ = st.submit(alice, name="first", spec_text="x", spec_source="first",
                         sweep_dir=str(tmp_path / "store" / "a"), priority=5,
                         estimate_cpu_s=7200.0, seed_runs_total=4, trials_total=2)
        b, _ = st.submit(bob, name="second", spec_text="x", spec_source="second",
                         sweep_dir=str(tmp_path / "store" / "b"), priority=1,
                         estimate_cpu_s=3600.0, seed_runs_total=4, trials_total=2)
        st.set_state(a.id, "running")
        st.record_usage(a.id, cpu_s=5400.0)
        st.set_state(a.id, "done")
        # bob's sweep took one of alice's rows: indexed where it was trained and where copied
        st.add_identities([
            {"config_hash": "h1", "seed": 0, "sweep_dir": a.sweep_dir, "sweep_id": a.id,
             "owner_id": alice.id, "cpu_s": 1800.0},
            {"config_hash": "h1", "seed": 0, "sweep_dir": b.sweep_dir, "sweep_id": b.id,
             "owner_id": bob.id, "source_dir": a.sweep_dir, "cpu_s": 0.0}])
        st.record_progress(b.id, seed_runs_done=1, seed_runs_reused=1,
                           message="waits for free resources")
        yield url, st, token, alice, (a, b)


def _page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, errors


def _cell(page, sweep_id: int, key: str) -> str:
    return page.locator(f'#queue tr[data-id="{sweep_id}"] td[data-k="{key}"]').inner_text()


def test_the_queue_page_shows_the_queue_live(browser, lab, tmp_path):
    url, st, token, alice, (a, b) = lab
    page, errors = _page(browser)
    page.goto(f"{url}/queue#token={token}")
    page.wait_for_selector(f'#queue tr[data-id="{b.id}"]')
    assert _cell(page, b.id, "owner") == "bob"
    assert _cell(page, b.id, "priority") == "1"
    assert _cell(page, b.id, "state") == "queued"
    assert _cell(page, b.id, "position") == "1"
    assert _cell(page, b.id, "progress") == "1/4"
    assert _cell(page, b.id, "reused") == "1"
    assert _cell(page, b.id, "estimate_cpu_h") == "1.00"
    assert _cell(page, b.id, "message") == "waits for free resources"
    assert _cell(page, a.id, "state") == "done" and _cell(page, a.id, "used_cpu_h") == "1.50"
    # the token left the address bar (it stays in the tab's session storage)
    assert "token" not in page.url
    # live: a new submission and a state change show without a reload
    c, _ = st.submit(alice, name="third", spec_text="x", spec_source="third",
                     sweep_dir=str(tmp_path / "store" / "c"), priority=9)
    page.wait_for_selector(f'#queue tr[data-id="{c.id}"]')
    assert _cell(page, c.id, "position") == "1" and _cell(page, b.id, "position") == "2"
    st.set_state(b.id, "running")
    page.wait_for_selector(f'#queue tr[data-id="{b.id}"][data-state="running"]')
    assert errors == []


def test_the_accounting_page_shows_hours_used_estimated_and_saved(browser, lab):
    from grokray.service import accounting

    url, st, token, _, (a, b) = lab
    page, errors = _page(browser)
    page.goto(f"{url}/accounting#token={token}")
    page.wait_for_selector('#sweeps tr[data-sweep]')

    def cell(table, attr, value, key):
        return page.locator(f'#{table} tr[data-{attr}="{value}"] td[data-k="{key}"]').inner_text()

    assert cell("sweeps", "sweep", a.id, "cpu_h_used") == "1.5000"
    assert cell("sweeps", "sweep", a.id, "cpu_h_estimated") == "2.0000"
    assert cell("sweeps", "sweep", b.id, "seed_runs_reused") == "1"
    assert cell("sweeps", "sweep", b.id, "cpu_h_saved") == "0.5000"
    assert cell("users", "owner", "bob", "cpu_h_saved") == "0.5000"
    assert cell("users", "owner", "alice", "cpu_h_used") == "1.5000"
    got = {x["owner"]: x for x in accounting.as_json(st)["users"]}
    assert got["bob"]["cpu_h_saved"] == pytest.approx(0.5)
    assert errors == []


def test_a_page_without_a_token_says_so(browser, lab):
    url = lab[0]
    page, _ = _page(browser)
    page.goto(f"{url}/accounting")
    page.wait_for_function("document.getElementById('err').textContent.length > 0")
    assert "token" in page.locator("#err").inner_text()
