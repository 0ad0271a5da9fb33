"""`grokray dashboard` as a process over HTTP: read-only, nothing outside the given dirs, bad
input in one line (exit 2), loopback by default, a warning for another host, live refresh."""

import http.client
import json
import os
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest

SECRET = "TOPSECRET-4711"


@pytest.fixture(scope="module")
def served(tmp_path_factory, sweepdir, dashboard_proc):
    root = tmp_path_factory.mktemp("dash")
    out = str(root / "results" / "syn")
    sweepdir.write_sweep(out, trials=8, seeds=2, evals=10)
    sweepdir.write_plan(out, trials=10, seeds=2)
    outside = root / "private"
    outside.mkdir()
    (outside / "notes.txt").write_text(SECRET)
    sweepdir.write_sweep(str(outside / "other"), trials=1, seeds=1, evals=3, start=90,
                         name=SECRET)
    secret_parquet = next((outside / "other" / "trials").iterdir())
    os.symlink(secret_parquet, os.path.join(out, "trials", "0000-evil.parquet"))
    os.symlink(outside / "notes.txt", os.path.join(out, "curves", "0000-evil.parquet"))
    with open(os.path.join(out, "trials", "ffff-damaged.parquet"), "wb") as f:
        f.write(b"PAR1 truncated")
    proc, url, lines = dashboard_proc.start([out])
    yield proc, url, out, lines, outside
    dashboard_proc.stop(proc)


def _get(url: str, path: str, method: str = "GET", host: str | None = None):
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.putrequest(method, path, skip_host=host is not None, skip_accept_encoding=True)
    if host is not None:
        conn.putheader("Host", host)
    conn.endheaders()
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


def test_binds_loopback_and_names_problems(served):
    proc, url, out, lines, _ = served
    assert urlsplit(url).hostname == "127.0.0.1"
    status, body = _get(url, "/api/overview?sweep=0")
    o = json.loads(body)
    assert status == 200 and o["rows"] == 16 and o["planned_rows"] == 20
    problems = "\n".join(o["problems"])
    assert "ffff-damaged.parquet: cannot read" in problems
    assert "0000-evil.parquet: a symlink to a file outside the dir: not read" in problems
    assert any("ffff-damaged.parquet" in ln for ln in lines)  # warned at start too


TRAVERSALS = [
    "/static/../../../../etc/passwd", "/static/..%2f..%2f..%2fetc%2fpasswd",
    "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/static/%252e%252e/%252e%252e/etc/passwd",
    "//etc/passwd", "/static//etc/passwd", "/static/%2fetc%2fpasswd", "/../../etc/passwd",
    "/static/..\\..\\etc\\passwd", "/static/plotly.min.js/../../../private/notes.txt",
    "/private/notes.txt", "/api/trials?sweep=../private", "/api/trials?sweep=%2e%2e%2f",
    "/api/trials?sweep=-1", "/api/trials?sweep=1", "/api/curves?sweep=0&metric=../notes.txt",
    "/api/curves?sweep=0&where=%7B%22..%2F..%22%3A%5B%22x%22%5D%7D",
    "/api/seeds?sweep=0&arm=../../private&metric=val_acc",
    "/api/compare?a=0&b=/etc/passwd", "/trials/0000-evil.parquet", "/results/syn/plan.json",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_nothing_outside_the_dirs(served, path):
    _, url, _, _, _ = served
    status, body = _get(url, path)
    assert SECRET.encode() not in body
    assert b"root:" not in body
    assert status in (400, 404), (path, status, body[:200])


def test_symlinked_rows_never_served(served):
    _, url, _, _, _ = served
    for path in ("/api/trials?sweep=0", "/api/overview?sweep=0", "/api/parcoords?sweep=0",
                 "/api/curves?sweep=0&metric=val_acc", "/api/compare?a=0&b=0"):
        status, body = _get(url, path)
        assert status == 200 and SECRET.encode() not in body, path
    rows = json.loads(_get(url, "/api/trials?sweep=0")[1])["rows"]
    assert len(rows) == 16


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize("path", ["/", "/api/state", "/api/trials?sweep=0"])
def test_read_only(served, method, path):
    _, url, out, _, _ = served
    before = sorted(os.listdir(os.path.join(out, "trials")))
    status, _ = _get(url, path, method)
    assert status == 405
    assert sorted(os.listdir(os.path.join(out, "trials"))) == before


def test_foreign_host_header_refused(served):
    _, url, _, _, _ = served
    assert _get(url, "/api/state", host="evil.example:80")[0] == 403
    assert _get(url, "/api/state", host=f"localhost:{urlsplit(url).port}")[0] == 200


def test_assets_come_from_the_packages(served):
    _, url, _, _, _ = served
    status, page = _get(url, "/")
    assert status == 200
    assert b"http://" not in page and b"https://" not in page  # no external asset
    status, js = _get(url, "/static/plotly.min.js")
    from plotly.offline import get_plotlyjs

    assert status == 200 and js == get_plotlyjs().encode()


def test_new_files_appear(served, sweepdir):
    _, url, out, _, _ = served
    v0 = json.loads(_get(url, "/api/state")[1])["sweeps"][0]["version"]
    sweepdir.write_sweep(out, trials=1, seeds=2, evals=10, start=8)
    deadline = time.monotonic() + 120  # bounds a failure only: the loop ends at the new version
    while time.monotonic() < deadline:
        s = json.loads(_get(url, "/api/state")[1])["sweeps"][0]
        if s["version"] > v0:
            break
        time.sleep(0.3)
    assert s["rows"] == 18
    o = json.loads(_get(url, "/api/overview?sweep=0")[1])
    assert o["rows"] == 18 and o["pending_rows"] == 2


def _run(*args):
    return subprocess.run([sys.executable, "-m", "grokray.cli", "dashboard", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, says", [
    (["/no/such/dir"], "no such dir: /no/such/dir"),
    (["nope://bucket/x"], "cannot open nope://bucket/x"),
    ([".", "--port", "70000"], "--port 70000: give a port number 0..65535"),
])
def test_bad_input_one_line(args, says, tmp_path):
    if args[0] == ".":
        args = [str(tmp_path / "empty"), *args[1:]]
        (tmp_path / "empty" / "trials").mkdir(parents=True)
    r = _run(*args)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


def test_dir_without_sweeps(tmp_path):
    r = _run(str(tmp_path))
    assert r.returncode == 2 and "has no trials/ dir" in r.stderr


def test_other_host_warns(served, dashboard_proc):
    _, _, out, _, _ = served
    proc, url, lines = dashboard_proc.start([out], "--host", "0.0.0.0")
    try:
        assert any(ln.startswith("warning: serving on 0.0.0.0, not this machine only")
                   for ln in lines)
        assert _get(url, "/api/state")[0] == 200
    finally:
        dashboard_proc.stop(proc)
