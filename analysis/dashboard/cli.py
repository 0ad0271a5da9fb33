"""`grokray dashboard OUT [OUT ...] [--port N] [--host H]`: a local, read-only web page over
sweep output dirs (or an output root such as the ledger's; local paths or URLs such as
s3://bucket/results) that fills in while sweeps write.

Binds 127.0.0.1 unless `--host` says otherwise (then it warns: anyone who reaches the port sees
the results). Reads the dirs once at start, then only new files every few seconds; writes
nothing.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time

DEFAULT_PORT = 8766


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `dashboard`."""
    p = subparsers.add_parser(
        "dashboard", help="a live local web page over sweep output dirs (read-only)",
        description="Serve a read-only page over sweep output dirs (OUT/<sweep>) or output "
                    "roots holding several: counts, grok rates, curves by arm, trials, "
                    "parallel coordinates, the analysis views, a comparison of two sweeps. It "
                    "refreshes within seconds while a sweep writes.",
    )
    p.add_argument("paths", nargs="+", metavar="OUT",
                   help="sweep output dir(s) (OUT/<sweep>) or output root(s) (OUT); local "
                        "paths or URLs (s3://bucket/results)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples of the analysis views (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap RNG seed (default 0)")
    p.set_defaults(func=main)
    return p


def _check(args: argparse.Namespace) -> None:
    from grokray import reader
    from grokray.errors import GrokrayError
    from grokray_analysis.dashboard.index import sweep_dirs

    if not 0 <= args.port <= 65535:
        raise GrokrayError(f"--port {args.port}: give a port number 0..65535")
    for path in args.paths:
        shown = reader.strip_query(path)
        try:
            is_dir = reader.Location.of(path).is_dir()
        except (OSError, ValueError) as exc:
            raise GrokrayError(f"cannot open {shown}: {' '.join(str(exc).split())[:200]}; "
                               "check the URL and the credentials") from None
        if not is_dir:
            raise GrokrayError(f"no such dir: {shown}; give a sweep output dir (OUT/<sweep>) "
                               "or an output root (OUT), a local path or a URL")
        if not sweep_dirs(path):
            raise GrokrayError(f"{shown} has no trials/ dir and no sweep dirs under it; give a "
                               "sweep output dir (OUT/<sweep>) or an output root (OUT)")


def _bind(host: str, port: int) -> socket.socket:
    from grokray.errors import GrokrayError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise GrokrayError(f"--host {host}: cannot resolve ({exc.strerror}); give an address "
                           "such as 127.0.0.1") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        raise GrokrayError(f"cannot listen on {host}:{port}: {exc.strerror}; pick another "
                           "--port (0: any free one)") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def main(args: argparse.Namespace) -> int:
    """Index the dirs, bind, serve until interrupted."""
    _check(args)
    from grokray_analysis.dashboard.server import LOOPBACK

    sock = _bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    if args.host not in LOOPBACK:
        print(f"warning: serving on {args.host}, not this machine only: anyone who reaches "
              f"port {port} there can read these results (no login); the default 127.0.0.1 "
              "with an SSH tunnel is safer (docs/dashboard.md)", file=sys.stderr)
    from aiohttp import web

    from grokray_analysis.dashboard.server import Dashboard, make_app

    t0 = time.perf_counter()
    dash = Dashboard(args.paths, n_boot=args.bootstrap, seed=args.seed)
    dash.refresh()
    rows = sum(s.n_rows for s in dash.sweeps)
    files = sum(s.n_files for s in dash.sweeps)
    print(f"indexed {len(dash.sweeps)} sweep dir(s): {rows} seed-rows, {files} files in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    for s in dash.sweeps:
        for line in sorted(s.problems.values()):
            print(f"warning: {line}", file=sys.stderr)
    url_host = f"[{host}]" if ":" in host else host
    print(f"grokray dashboard: http://{url_host}:{port}/ (Ctrl-C stops it)", flush=True)
    web.run_app(make_app(dash, args.host), sock=sock, print=None, handle_signals=True)
    return 0
