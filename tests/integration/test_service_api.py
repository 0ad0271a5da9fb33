"""The sweep service's HTTP API over real HTTP on loopback (an SQLite database): submit, the
queue, show, hold/release/priority/cancel through the CLI's client, idempotent resubmission,
bad input and attacks (the CLI's one line as 400/413 and nothing stored; 401, 403, 404), a
bounded request storm, and the OpenAPI document against the routes."""

from __future__ import annotations

import concurrent.futures as cf
import os
import uuid

import pytest

from grokray.errors import GrokrayError, SpecError
from grokray.service.api import OPENAPI, ROUTES, Settings
from grokray.service.client import Client
from grokray.sweep.spec import load_spec
from tests.helpers.service import call, in_thread, queue_spec

SPEC = queue_spec("tiny")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("service")
    with in_thread(str(root / "service.db"), str(root / "store")) as (url, st):
        alice, ta = st.add_user("alice")
        bob, tb = st.add_user("bob")
        root_user, tr = st.add_user("root", admin=True)
        yield {"url": url, "st": st, "root": root, "alice": Client(url, ta),
               "bob": Client(url, tb), "admin": Client(url, tr), "tokens": (ta, tb, tr)}


def _count(st) -> int:
    return len(st.list_queue(states=("queued", "held", "running", "preempted", "done",
                                     "failed", "cancelled")))


def test_submit_queue_show_and_act(service, tmp_path):
    alice, bob, admin, st = service["alice"], service["bob"], service["admin"], service["st"]
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)
    status, a = alice.submit(str(spec), priority=1)
    assert status == 201 and a["name"] == "tiny" and a["owner"] == "alice"
    assert (a["trials_total"], a["seed_runs_total"], a["state"]) == (2, 4, "queued")
    assert a["estimate_cpu_s"] > 0 and a["spec_source"] == str(spec)
    assert a["sweep_dir"] == os.path.join(str(service["root"] / "store"), "alice", str(a["id"]),
                                          "tiny")
    assert st.spec_text(a["id"]) == SPEC  # byte for byte
    _, b = bob.submit("smoke", priority=5)
    _, c = bob.submit(str(spec), hold=True)
    q = [s for s in alice.queue() if s["id"] in (a["id"], b["id"], c["id"])]
    assert [(s["id"], s["state"], s["priority"]) for s in q] == [
        (b["id"], "queued", 5), (a["id"], "queued", 1), (c["id"], "held", 0)]
    assert q[0]["position"] < q[1]["position"] and q[2]["position"] == 0
    shown = alice.show(str(a["id"]))
    assert shown["id"] == a["id"] and [e["kind"] for e in shown["events"]] == ["submitted"]
    with pytest.raises(GrokrayError, match=f"sweep {b['id']} is bob's; only its owner or an "
                                           "admin may change it"):
        alice.act(str(b["id"]), "cancel")
    with pytest.raises(GrokrayError, match="only its owner or an admin"):
        alice.act(str(b["id"]), "priority", priority=99)
    assert bob.act(str(c["id"]), "release")["state"] == "queued"
    assert bob.act(str(c["id"]), "hold")["state"] == "held"
    assert admin.act(str(b["id"]), "priority", priority=-1)["priority"] == -1
    assert [s["id"] for s in alice.queue(user="bob")] == [b["id"], c["id"]]
    assert admin.act(str(c["id"]), "cancel")["state"] == "cancelled"
    with pytest.raises(GrokrayError, match=f"sweep {c['id']} is cancelled; it can become held "
                                           "only from queued or preempted"):
        bob.act(str(c["id"]), "hold")
    assert c["id"] not in [s["id"] for s in alice.queue()]
    assert c["id"] in [s["id"] for s in alice.queue(all=True)]
    assert [s["id"] for s in alice.queue(states=["cancelled"])] == [c["id"]]


def test_the_same_idempotency_key_makes_one_sweep(service):
    url, (ta, _, _) = service["url"], service["tokens"]
    key = uuid.uuid4().hex
    n = _count(service["st"])
    first = call(f"{url}/api/sweeps?source=s.yaml", "POST", ta, SPEC.encode(),
                 {"Idempotency-Key": key})
    again = call(f"{url}/api/sweeps?source=s.yaml", "POST", ta, SPEC.encode(),
                 {"Idempotency-Key": key})
    assert (first[0], again[0]) == (201, 200) and first[1]["id"] == again[1]["id"]
    assert _count(service["st"]) == n + 1


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + "name: bomb\n"


@pytest.mark.parametrize("text", [
    "name: bad\nconfig: {group: Q9}\nseeds: 1\n",             # an unknown group
    "name: bad\nconfig: {grup: Z5}\nseeds: 1\n",               # an unknown key
    "name: [unclosed\n",                                      # not YAML
    BOMB,                                                     # a billion laughs
    "name: ok\n\xff\n",                                       # not UTF-8 (sent as bytes below)
], ids=["group", "key", "yaml", "bomb", "utf8"])
def test_a_bad_spec_gets_the_clis_line_and_nothing_is_stored(service, tmp_path, text):
    url, (ta, _, _) = service["url"], service["tokens"]
    path = tmp_path / "bad.yaml"
    raw = text.encode("latin-1") if "\xff" in text else text.encode()
    path.write_bytes(raw)
    with pytest.raises(SpecError) as cli:
        load_spec(str(path))  # what `grokray sweep bad.yaml` prints
    n = _count(service["st"])
    status, body = call(f"{url}/api/sweeps?source={path}", "POST", ta, raw)
    assert status == 400 and body["type"] == "SpecError"
    assert body["error"] == str(cli.value)
    with pytest.raises(SpecError) as client:
        service["alice"].submit(str(path))
    assert str(client.value) == str(cli.value)
    assert _count(service["st"]) == n


def test_a_50_mb_body_is_413_with_the_clis_line(service):
    url, (ta, _, _) = service["url"], service["tokens"]
    n = _count(service["st"])
    status, body = call(f"{url}/api/sweeps?source=huge.yaml", "POST", ta,
                        b"name: x\n" + b"#" * (50 << 20))
    assert status == 413
    assert body == {"error": "huge.yaml: (file): larger than 1,048,576 bytes; a sweep spec is "
                             "a short YAML file", "type": "SpecError"}
    assert _count(service["st"]) == n
    assert call(f"{url}/api/health")[0] == 200  # and it still answers


def test_unknown_ids_tokens_and_names(service):
    url, (ta, tb, _) = service["url"], service["tokens"]
    n = _count(service["st"])
    assert call(f"{url}/api/sweeps/999999", token=ta)[0] == 404
    assert call(f"{url}/api/sweeps/999999/cancel", "POST", ta)[0] == 404
    status, body = call(f"{url}/api/sweeps/1%20OR%201=1", token=ta)
    assert status == 404 and "a sweep id is a number" in body["error"]
    for token in (None, "", "wrong", ta + "x", "x" * 5000):
        status, body = call(f"{url}/api/sweeps", token=token)
        assert status == 401 and body["error"].startswith(("no token", "wrong token"))
    assert call(f"{url}/api/sweeps?name=smoke", "POST", "wrong")[0] == 401
    # a SQL-looking name is a name: not a shipped spec, and every table is still there
    evil = "smoke'; DROP TABLE sweeps; --"
    status, body = call(f"{url}/api/sweeps?name={evil.replace(' ', '%20')}", "POST", ta)
    assert status == 400 and body["error"].startswith(f"{evil}: sweep spec not found")
    status, body = call(f"{url}/api/sweeps?user=alice'%20OR%20'1'='1", token=ta)
    assert status == 200 and body["sweeps"] == []
    # a spec whose text is SQL-looking is stored as written
    text = SPEC.replace("name: tiny", "name: tiny\ndescription: \"'); DELETE FROM users; --\"")
    status, sw = call(f"{url}/api/sweeps?source=q.yaml", "POST", tb, text.encode())
    assert status == 201 and service["st"].spec_text(sw["id"]) == text
    assert [u.name for u in service["st"].users()] == ["alice", "bob", "root"]
    assert _count(service["st"]) == n + 1
    status, body = call(f"{url}/api/sweeps?source=q.yaml&priority=high", "POST", tb,
                        text.encode())
    assert status == 400 and body["error"] == "priority 'high': give a whole number"
    # a shipped name never reads a file of the service's machine
    status, body = call(f"{url}/api/sweeps?name=/etc/passwd", "POST", ta)
    assert status == 400 and body["error"].startswith("/etc/passwd: sweep spec not found")
    assert _count(service["st"]) == n + 1


def test_a_request_storm_slows_down_and_loses_nothing(service):
    """16 clients at once, 48 submissions and 48 queue listings: every submission answered
    and stored once (the benchmark storms harder: benchmarks/bench_service.py)."""
    url, (ta, tb, _) = service["url"], service["tokens"]
    before = _count(service["st"])
    keys = [uuid.uuid4().hex for _ in range(48)]

    def one(i: int) -> tuple[int, int, int]:
        token = ta if i % 2 else tb
        s1, sw = call(f"{url}/api/sweeps?source=storm.yaml&priority={i % 3}", "POST", token,
                      SPEC.encode(), {"Idempotency-Key": keys[i]}, timeout=120)
        s2, _ = call(f"{url}/api/sweeps", token=token, timeout=120)
        return s1, s2, sw.get("id", -1)

    with cf.ThreadPoolExecutor(16) as pool:
        out = list(pool.map(one, range(48)))
    assert {(s1, s2) for s1, s2, _ in out} == {(201, 200)}
    ids = [i for _, _, i in out]
    assert len(set(ids)) == 48
    assert _count(service["st"]) == before + 48
    assert call(f"{url}/api/health")[0] == 200


def test_the_openapi_document_names_every_route(service):
    status, doc = call(f"{service['url']}/api/openapi.json")
    assert status == 200 and doc == OPENAPI and doc["openapi"].startswith("3.")
    from grokray.service.api import make_app

    app = make_app(service["st"], Settings("unused"))
    served = {(r.method.lower(), r.resource.canonical) for r in app.router.routes()
              if r.resource.canonical.startswith("/api/") and r.method != "HEAD"}
    documented = {(m, p) for p, ops in OPENAPI["paths"].items() for m in ops}
    assert served == documented and {(m.lower(), p) for m, p, _ in ROUTES} <= documented
    assert call(f"{service['url']}/api/whoami", token=service["tokens"][2])[1]["admin"] is True


def test_serve_listens_on_loopback_unless_told():
    from grokray.cli import build_parser

    args = build_parser().parse_args(["serve"])
    assert args.host == "127.0.0.1" and args.db is None and args.port == 8750


def test_the_client_verbs_say_what_grokray_sweep_says(service, tmp_path, monkeypatch, capsys):
    from grokray.cli import main

    db = str(tmp_path / "other.db")
    assert main(["users", "--db", db, "add", "carol", "--json"]) == 0
    assert '"name": "carol"' in capsys.readouterr().out
    assert main(["users", "--db", db, "add", "carol"]) == 2
    assert capsys.readouterr().err.startswith("grokray users: error: user carol exists")
    monkeypatch.setenv("GROKRAY_SERVER", service["url"])
    monkeypatch.setenv("GROKRAY_TOKEN", service["tokens"][0])
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nconfig: {group: Q9}\nseeds: 1\n")
    assert main(["sweep", str(bad), "--dry-run"]) == 2
    said = capsys.readouterr().err
    assert main(["submit", str(bad)]) == 2
    assert capsys.readouterr().err == said and said.count("\n") == 1
    assert main(["submit", "smoke", "--priority", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sweep ") and "(alice, priority 2)" in out
    sid = out.split()[1]
    assert main(["hold", sid]) == 0 and capsys.readouterr().out.endswith(": held\n")
    assert main(["queue", "--user", "alice", "--state", "held"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:5] == ["ID", "POS", "USER", "PRI", "STATE"]
    assert [r.split()[0] for r in table[1:]] == [sid]
    assert main(["show", sid]) == 0 and "events:" in capsys.readouterr().out
    assert main(["cancel", "99999"]) == 2
    assert capsys.readouterr().err == ("grokray cancel: error: no sweep 99999; `grokray queue "
                                       "--all` lists them\n")
    monkeypatch.setenv("GROKRAY_SERVER", "http://127.0.0.1:9")  # nothing listens there
    assert main(["queue"]) == 2
    assert "cannot reach the service at http://127.0.0.1:9" in capsys.readouterr().err
