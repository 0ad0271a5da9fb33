"""The CLI's client of the service's HTTP API (urllib only: the client verbs start fast and need
nothing the service needs).

Where: `--server URL`, else $GROKRAY_SERVER, else http://127.0.0.1:8750 (the service's default;
from a laptop, the end of an SSH tunnel: docs/service.md). Who: $GROKRAY_TOKEN, else the first
line of $GROKRAY_TOKEN_FILE or ~/.config/grokray/token.

An error the service answers is raised as the CLI's error of the same kind (a bad spec: the
SpecError line `grokray sweep` prints), so `grokray submit` says what `grokray sweep` says. A
submission carries an idempotency key and is sent again, with the same key, while the service
cannot be reached or its database does not answer (up to a minute): it is stored once. The
other verbs say at once that the service cannot be reached.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

from grokray.errors import GrokrayError, SpecError

__all__ = ["Client", "DEFAULT_SERVER", "DEFAULT_PORT", "token_file", "add_client_arguments",
           "action_command"]

DEFAULT_PORT = 8750
DEFAULT_SERVER = f"http://127.0.0.1:{DEFAULT_PORT}"


def token_file() -> Path:
    """Where the client looks for its token when $GROKRAY_TOKEN is not set."""
    if os.environ.get("GROKRAY_TOKEN_FILE"):
        return Path(os.environ["GROKRAY_TOKEN_FILE"])
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "grokray" / "token"


def _token() -> str | None:
    if os.environ.get("GROKRAY_TOKEN"):
        return os.environ["GROKRAY_TOKEN"].strip()
    try:
        return token_file().read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        return None


def add_client_arguments(p: Any) -> None:  # noqa: ANN401 - argparse.ArgumentParser
    """`--server` (every client verb)."""
    p.add_argument("--server", default=None,
                   help=f"the service's URL (default: $GROKRAY_SERVER, else {DEFAULT_SERVER})")


def action_command(verb: str, help: str, description: str) -> tuple[Any, Any]:  # noqa: A002
    """(add_parser, main) of a client verb that acts on one sweep: `grokray VERB ID` (cancel,
    hold, release), printing the sweep's state after it."""

    def add_parser(subparsers: Any) -> None:  # noqa: ANN401 - argparse._SubParsersAction
        p = subparsers.add_parser(verb, help=help, description=description)
        p.add_argument("id", help="the sweep's id (`grokray queue` shows them)")
        add_client_arguments(p)
        p.set_defaults(func=main)

    def main(args: Any) -> int:  # noqa: ANN401 - argparse.Namespace
        sw = Client(args.server).act(args.id, verb)
        print(f"sweep {sw['id']} {sw['name']} ({sw['owner']}): {sw['state']}")
        return 0

    return add_parser, main


class Client:
    """Calls to one service as one user."""

    def __init__(self, server: str | None = None, token: str | None = None,
                 timeout_s: float = 120.0) -> None:
        self.server = (server or os.environ.get("GROKRAY_SERVER") or DEFAULT_SERVER).rstrip("/")
        self.token = token if token is not None else _token()
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None,
                body: bytes | None = None, headers: dict[str, str] | None = None,
                retry_s: float = 0.0) -> tuple[int, Any]:
        """(status, the JSON answer) of a 2xx answer; the service's error as a GrokrayError
        (SpecError for a bad spec). Sent again while the service is unreachable or answers 503,
        for up to `retry_s` seconds."""
        # lazy: http.client and ssl, kept out of `grokray --help`
        import urllib.error
        import urllib.request

        url = self.server + path
        if query:
            pairs = [(k, str(x)) for k, v in query.items() if v is not None
                     for x in (v if isinstance(v, list) else [v])]
            url += "?" + urllib.parse.urlencode(pairs)
        hdrs = {"Accept": "application/json", **(headers or {})}
        if self.token:
            hdrs["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            hdrs["Content-Type"] = "application/yaml"
        deadline = time.monotonic() + retry_s
        wait = 0.2
        while True:
            req = urllib.request.Request(url, data=body, method=method, headers=hdrs)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    return resp.status, json.loads(resp.read() or b"null")
            except urllib.error.HTTPError as exc:
                raw = exc.read()
                if exc.code == 503 and time.monotonic() < deadline:
                    pass
                else:
                    raise self._error(exc.code, raw) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                if time.monotonic() >= deadline:
                    reason = getattr(exc, "reason", exc)
                    raise GrokrayError(
                        f"cannot reach the service at {self.server} ({reason}); start it with "
                        "`grokray serve`, or open the SSH tunnel to it (docs/service.md), or "
                        "give --server / $GROKRAY_SERVER") from None
            time.sleep(wait)
            wait = min(wait * 2, 2.0)

    def _error(self, status: int, raw: bytes) -> GrokrayError:
        try:
            data = json.loads(raw)
            line, kind = str(data["error"]), str(data.get("type", ""))
        except (ValueError, KeyError, TypeError):
            line, kind = f"HTTP {status} from {self.server}: {raw[:200]!r}", ""
        if status == 401 and not self.token:
            line = (f"no token: set $GROKRAY_TOKEN or write it to {token_file()} (an admin "
                    "makes one with `grokray users add NAME` on the service's machine)")
        return SpecError(line) if kind == "SpecError" else GrokrayError(line)

    # ------------------------------------------------------------------------------ verbs

    def submit(self, spec: str, *, priority: int = 0, hold: bool = False,
               retry_s: float = 60.0) -> tuple[int, dict]:
        """Submit a spec file (its text is sent) or a shipped name (resolved by the service)."""
        key = uuid.uuid4().hex
        query: dict[str, Any] = {"priority": priority, "hold": 1 if hold else None}
        if os.path.exists(spec):
            from grokray.service.submit import MAX_SPEC_BYTES, too_large

            try:
                with open(spec, "rb") as f:
                    body = f.read(MAX_SPEC_BYTES + 1)
            except IsADirectoryError:
                raise SpecError(f"{spec}: is a directory; give a sweep spec YAML file") from None
            except OSError as exc:
                raise SpecError(f"{spec}: cannot read: {exc.strerror}") from None
            if len(body) > MAX_SPEC_BYTES:
                raise too_large(spec)
            query["source"] = spec
        else:
            body = None
            query["name"] = spec
        return self.request("POST", "/api/sweeps", query=query, body=body if body else b"",
                            headers={"Idempotency-Key": key}, retry_s=retry_s)

    def queue(self, *, all: bool = False, user: str | None = None,  # noqa: A002
              states: list[str] | None = None, limit: int | None = None) -> list[dict]:
        query: dict[str, Any] = {"all": 1 if all else None, "user": user, "limit": limit}
        if states:
            query["state"] = states
        return self.request("GET", "/api/sweeps", query=query)[1]["sweeps"]

    def show(self, sweep_id: str) -> dict:
        return self.request("GET", f"/api/sweeps/{urllib.parse.quote(sweep_id)}")[1]

    def act(self, sweep_id: str, action: str, **query: Any) -> dict:  # noqa: ANN401
        return self.request("POST", f"/api/sweeps/{urllib.parse.quote(sweep_id)}/{action}",
                            query=query or None)[1]
