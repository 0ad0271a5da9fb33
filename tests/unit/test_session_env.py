"""The embedded Ray's thread environment: an invalid OMP_NUM_THREADS is dropped with one line."""

from grokray.sweep.session import drop_bad_thread_env


def test_an_empty_or_invalid_omp_num_threads_is_dropped_with_one_line(capsys):
    for bad in ("", " ", "0", "two", "-1"):
        env = {"OMP_NUM_THREADS": bad, "PATH": "/bin"}
        assert drop_bad_thread_env(env) == ["OMP_NUM_THREADS"]
        assert env == {"PATH": "/bin"}
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "OMP_NUM_THREADS" in err and repr(bad) in err


def test_a_valid_or_absent_omp_num_threads_is_kept(capsys):
    for env in ({"OMP_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "8"}, {}):
        before = dict(env)
        assert drop_bad_thread_env(env) == []
        assert env == before
    assert capsys.readouterr().err == ""
