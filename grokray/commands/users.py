"""`grokray users add NAME [--admin]`: the service's users, managed on the service's machine
against its database (`--db`, as `grokray serve` was given). `add` prints the new user's token
once (only its hash is stored); `token NAME` replaces a lost one; `quota NAME` sets the CPU/GPU
hours the cost model may price their sweeps at; `list` shows them.
"""

from __future__ import annotations

import argparse
import json


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "users", help="the sweep service's users and tokens (on the service's machine)",
        description="Add users of the service, make tokens, set quotas (docs/service.md).")
    p.add_argument("--db", default=None,
                   help="the service's database, as given to `grokray serve` (default: "
                        "grokray-service/service.db)")
    sub = p.add_subparsers(dest="users_command", metavar="add|list|token|quota")
    sub.required = True
    js = argparse.ArgumentParser(add_help=False)
    js.add_argument("--json", action="store_true", help="print JSON")
    a = sub.add_parser("add", help="add a user; prints their token once", parents=[js])
    a.add_argument("name", help="the user's name (letters, digits, _ - .)")
    a.add_argument("--admin", action="store_true",
                   help="may cancel and reprioritise any sweep")
    a.add_argument("--quota-cpu-hours", type=float, default=None)
    a.add_argument("--quota-gpu-hours", type=float, default=None)
    sub.add_parser("list", help="list the users", parents=[js])
    t = sub.add_parser("token", help="a new token for a user (the old one stops working)",
                       parents=[js])
    t.add_argument("name")
    q = sub.add_parser("quota", help="set a user's quota (omit a kind: no limit on it)")
    q.add_argument("name")
    q.add_argument("--cpu-hours", type=float, default=None)
    q.add_argument("--gpu-hours", type=float, default=None)
    p.set_defaults(func=main, json=False)


def _quota(v: float | None) -> str:
    return "none" if v is None else f"{v:g} h"


def main(args: argparse.Namespace) -> int:
    from grokray.commands.serve import _open, db_of
    from grokray.errors import GrokrayError

    for key in ("quota_cpu_hours", "quota_gpu_hours", "cpu_hours", "gpu_hours"):
        v = getattr(args, key, None)
        if v is not None and not v >= 0:
            raise GrokrayError(f"--{key.replace('_', '-')} {v}: give hours >= 0")
    st = _open(db_of(args))
    try:
        if args.users_command == "add":
            user, token = st.add_user(args.name, admin=args.admin,
                                      quota_cpu_hours=args.quota_cpu_hours,
                                      quota_gpu_hours=args.quota_gpu_hours)
            if args.json:
                print(json.dumps({"name": user.name, "admin": user.admin, "token": token}))
            else:
                print(f"user {user.name}{' (admin)' if user.admin else ''} added; their token "
                      "(shown once; give it to them):")
                print(token)
            return 0
        if args.users_command == "token":
            token = st.new_token(args.name)
            print(json.dumps({"name": args.name, "token": token}) if args.json else token)
            return 0
        if args.users_command == "quota":
            u = st.set_quota(args.name, cpu_hours=args.cpu_hours, gpu_hours=args.gpu_hours)
            print(f"user {u.name}: quota {_quota(u.quota_cpu_hours)} CPU, "
                  f"{_quota(u.quota_gpu_hours)} GPU")
            return 0
        users = st.users()
        if args.json:
            print(json.dumps([{"name": u.name, "admin": u.admin,
                               "quota_cpu_hours": u.quota_cpu_hours,
                               "quota_gpu_hours": u.quota_gpu_hours,
                               "created_at": u.created_at.isoformat()} for u in users]))
        else:
            for u in users:
                print(f"{u.name}{'  admin' if u.admin else ''}  quota CPU "
                      f"{_quota(u.quota_cpu_hours)}, GPU {_quota(u.quota_gpu_hours)}")
        return 0
    finally:
        st.close()
