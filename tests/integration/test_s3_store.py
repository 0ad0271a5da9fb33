"""Results in a bucket: a real S3 endpoint over HTTP on loopback (`moto_server`, from the dev
extra's `moto[server]`; skipped where it is not installed). Status shows the name without the
URL's query, a report lands in the bucket (not in a local dir named `s3:`), the dashboard reads
a bucket, and compaction keeps every row once there too."""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import subprocess
import sys
import time
from argparse import Namespace

import pyarrow.fs as pafs
import pytest

from grokray import reader

MOTO = shutil.which("moto_server") or shutil.which(
    "moto_server", path=os.path.dirname(sys.executable))
pytestmark = [pytest.mark.slow,  # about 2 minutes on 2 busy cores: a gated step of .ci/run
              pytest.mark.skipif(MOTO is None, reason="moto_server not installed (pip install "
                                                      "'moto[server]', the dev extra)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto_server on a free loopback port; yields the query a URL needs to reach it."""
    port = _free_port()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1"}
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")
    proc = subprocess.Popen([MOTO, "-H", "127.0.0.1", "-p", str(port)], stdout=log,
                            stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 60
    while True:  # up when it answers a request
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/")
            c.getresponse().read()
            c.close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"moto_server did not start (exit {proc.poll()})")
            time.sleep(0.2)
    saved = {k: os.environ.get(k) for k in env if k.startswith("AWS_")}
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
    query = f"endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
    fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                           region="us-east-1", access_key="testing", secret_key="testing",
                           allow_bucket_creation=True)
    fs.create_dir("bucket")
    yield query, fs
    proc.terminate()
    proc.wait(timeout=30)
    log.close()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _upload(fs, local, key: str) -> None:
    pafs.copy_files(str(local), f"bucket/{key}", source_filesystem=pafs.LocalFileSystem(),
                    destination_filesystem=fs)


@pytest.fixture(scope="module")
def sweep(s3, tmp_path_factory, sweepdir):
    query, fs = s3
    local = tmp_path_factory.mktemp("local") / "syn"
    sweepdir.write_sweep(str(local), trials=6, seeds=2, evals=10)
    sweepdir.write_plan(str(local), trials=8, seeds=2)
    _upload(fs, local, "lab/syn")
    return f"s3://bucket/lab/syn?{query}", local


def _grokray(*args, cwd):
    return subprocess.run([sys.executable, "-m", "grokray.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_status_shows_the_name_without_the_query(sweep, tmp_path):
    url, _ = sweep
    r = _grokray("status", url, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("sweep syn (s3://bucket/lab/syn): 6 trials with rows"), first
    assert "endpoint_override" not in r.stdout


def test_report_is_written_into_the_bucket(sweep, s3, tmp_path):
    url, _ = sweep
    _, fs = s3
    r = _grokray("analyze", "report", url, "--bootstrap", "20", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert list(tmp_path.iterdir()) == []  # no local dir named `s3:`
    assert "wrote s3://bucket/lab/syn/report/report.md" in r.stdout
    with fs.open_input_stream("bucket/lab/syn/report/report.md") as f:
        text = f.read().decode()
    assert text.startswith("# grokray analysis report")
    pngs = [i.base_name for i in fs.get_file_info(pafs.FileSelector("bucket/lab/syn/report"))
            if i.base_name.endswith(".png")]
    assert pngs and all(f"({p})" in text for p in pngs)


def test_dashboard_reads_a_bucket(sweep):
    from grokray_analysis.dashboard import views
    from grokray_analysis.dashboard.cli import _check
    from grokray_analysis.dashboard.server import Dashboard
    from grokray_analysis.load import load

    url, _ = sweep
    root = url.replace("/syn?", "?")
    _check(Namespace(port=0, paths=[root]))  # an output root in a bucket is taken
    dash = Dashboard([root], n_boot=20)
    assert dash.refresh()
    ix = dash.sweeps[0]
    assert ix.name == "syn" and len(ix.trials) == 12
    o = views.overview(ix)
    assert o["rows"] == 12 and o["planned_rows"] == 16 and o["path"] == "s3://bucket/lab/syn"
    bands = views.curves(ix, "val_acc", {})["bands"]
    assert sum(b["n_runs"] for b in bands) == len(load(url).trials)
    assert "endpoint_override" not in str(dash.state())


def test_compaction_and_load_in_a_bucket(s3, tmp_path, sweepdir):
    from grokray.sweep import compact
    from grokray_analysis.load import load

    query, fs = s3
    local = tmp_path / "c"
    sweepdir.write_sweep(str(local), trials=5, seeds=2, evals=4)
    _upload(fs, local, "lab/c")
    url = f"s3://bucket/lab/c?{query}"
    before = load(url)
    done = compact.compact(url)
    assert done.sources == 5 and done.rows == 10
    names = [i.base_name for i in fs.get_file_info(pafs.FileSelector("bucket/lab/c/trials"))]
    assert names == done.parts
    after = load(url)
    key = ["config_hash", "seed"]
    assert after.trials.sort_values(key)[key].values.tolist() == \
        before.trials.sort_values(key)[key].values.tolist()
    assert len(after.curves) == len(before.curves) == 5 * 2 * 4
    arm = after.trials["arm"].iloc[0]
    some = after.curves_of({"arm": arm})
    assert len(some) == 4 * int((after.trials["arm"] == arm).sum())
    assert reader.identities(url)["file"].tolist() == [done.parts[0]] * 10
