"""What the service does with a submission before it is stored: the spec validated by the same
code `grokray sweep` runs (grokray.sweep.spec, grokray.shipped for names), so every problem is
the same one line the CLI prints, and priced by the cost model (`grokray sweep --dry-run`'s
estimate) for the queue and the quota.

A client sends either the YAML text of its spec file (named by the path it was read from, so a
problem reads `FILE:LINE: key: ...` exactly as `grokray sweep FILE` says it) or the name of a
shipped spec (resolved on the service's machine among the shipped files only: a name never
reads a file of the service's machine).

A sweep's rows go to `<store>/<owner>/<id>/<name>`: the spec's `out` is replaced by
`<store>/<owner>/<id>`, so that two sweeps never share a dir and each stays self-contained.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from dataclasses import dataclass
from typing import Any

from grokray.errors import SpecError

__all__ = ["Prepared", "prepare", "sweep_dir_of", "spec_of", "MAX_SPEC_BYTES"]

_NOWHERE = "/nonexistent/grokray-service-estimate"
"""the out a spec is priced at: a dir with no rows (a new sweep's)"""
MAX_SPEC_BYTES = 1 << 20
"""the largest spec text (grokray.yamlsafe's limit; the API answers 413 above it)"""


@dataclass(frozen=True)
class Prepared:
    """A validated, priced submission."""

    name: str
    spec_text: str
    spec_source: str
    trials_total: int
    seed_runs_total: int
    cpu_s: float
    """the cost model's expected CPU seconds (this host's speed)"""
    gpu_s: float
    wall_s: float
    cpu_s_upper: float
    gpu_s_upper: float
    per_trial: tuple[float, float]
    """(cpu, gpu) of one trial (the spec's resources)"""
    concurrency: int | None
    note: str = ""
    """what the estimate left out or approximated ('' when nothing)"""


def too_large(source: str) -> SpecError:
    """The one line a spec over `MAX_SPEC_BYTES` gets (grokray.yamlsafe's, as the CLI says)."""
    from grokray.sweep.spec import SPEC
    from grokray.yamlsafe import _too_large

    return _too_large(source, SPEC)


def read_shipped(name: str) -> tuple[str, str]:
    """(the YAML text, the file's path) of the shipped spec `name`; SpecError (the CLI's line
    for an unknown name) otherwise. Only shipped files: never a path of this machine."""
    from grokray import shipped

    path = shipped.resolve(name, shipped.SWEEP, files=False)
    with open(path, encoding="utf-8") as f:
        return f.read(), path


def prepare(*, text: str | bytes | None = None, source: str = "<spec>",
            name: str | None = None) -> Prepared:
    """Validate and price a submission: `text` (the spec's YAML, read from `source`) or `name`
    (a shipped spec). Raises SpecError (one line per problem) for a bad spec."""
    if name is not None:
        text, _ = read_shipped(name)
        source = name
    if text is None:
        raise SpecError("give a sweep spec: the YAML text of a spec file, or a shipped name "
                        "(`grokray specs` lists them)")
    if isinstance(text, bytes):
        if len(text) > MAX_SPEC_BYTES:
            raise too_large(source)
        from grokray.sweep.spec import SPEC
        from grokray.yamlsafe import decode

        text = decode(text, source, SPEC)
    return _prepared(text, source)


@functools.lru_cache(maxsize=256)
def _prepared(text: str, source: str) -> Prepared:
    # the same text from the same source validates and prices the same (a fresh sweep dir
    # has no rows to read expected steps from), so a resubmission is answered from here
    from grokray.cost.sweep import estimate_plan
    from grokray.sweep.plan import make_plan
    from grokray.sweep.spec import parse_spec

    spec = parse_spec(text, source)
    priced = dataclasses.replace(spec, out=_NOWHERE)
    try:
        plan = make_plan(priced, build=False)
        cost = estimate_plan(plan, trials_df=_no_rows())
        est = (cost.cpu_s_expected, cost.gpu_s_expected, cost.wall_s_expected,
               cost.cpu_s_upper, cost.gpu_s_upper)
        notes = [x for x in (cost.approx, ", ".join(cost.no_model) and
                             f"no cost model for {', '.join(cost.no_model)}") if x]
    except (OSError, ValueError) as exc:  # a spec the cost model cannot price: queue it anyway
        est, notes = (0.0, 0.0, 0.0, 0.0, 0.0), [f"not priced: {exc}"[:200]]
    return Prepared(name=spec.name, spec_text=text, spec_source=source,
                    trials_total=spec.n_points, seed_runs_total=spec.n_points * len(spec.seeds),
                    cpu_s=est[0], gpu_s=est[1], wall_s=est[2], cpu_s_upper=est[3],
                    gpu_s_upper=est[4], per_trial=(spec.cpu, spec.gpu),
                    concurrency=spec.concurrency, note="; ".join(notes))


def _no_rows() -> Any:  # noqa: ANN401 - an empty trials DataFrame
    import pandas as pd

    return pd.DataFrame({"config_hash": pd.Series([], dtype=str),
                         "seed": pd.Series([], dtype="int64"),
                         "status": pd.Series([], dtype=str),
                         "steps_run": pd.Series([], dtype="int64")})


def sweep_dir_of(store: str, owner: str, sweep_id: int, name: str) -> str:
    """Where a sweep's rows go: `<store>/<owner>/<id>/<name>`."""
    from grokray.reader import join_uri

    return join_uri(join_uri(join_uri(store, owner), str(sweep_id)), name)


def spec_of(spec_text: str, spec_source: str, sweep_dir: str) -> Any:  # noqa: ANN401 - SweepSpec
    """The SweepSpec a stored sweep runs: its text, its `out` set so that it writes to
    `sweep_dir` (what the runner hands the sweep driver)."""
    from grokray.sweep.spec import parse_spec

    spec = parse_spec(spec_text, spec_source)
    out = sweep_dir.rsplit("/", 1)[0]
    return dataclasses.replace(spec, out=out)


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
