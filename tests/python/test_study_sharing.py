"""A study file is never silently lost: checked saves (lock + revision), safe temp files, and the Optuna-style
``optimize(callbacks=...)`` and ``trials_dataframe()`` of kt.Study."""
from __future__ import annotations

import datetime
import json
import math
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import kubetune as kt

PKG_DIR = str(Path(kt.__file__).resolve().parent.parent)
TIMEOUT = 60.0


def space() -> kt.SearchSpace:
    s = kt.SearchSpace()
    s.add_float("x", -5.0, 5.0).add_int("n", 1, 20).add_categorical("c", ["a", "b"])
    return s


def objective(t: Any) -> float:
    p = t.params
    return (p["x"] - 1.0) ** 2 + 0.1 * p["n"] + (0.5 if p["c"] == "a" else 0.0)


def seeded_file(path: Path, n: int = 5) -> kt.Study:
    st = kt.Study(space(), seed=3)
    st.optimize(objective, n_trials=n)
    st.save(path)
    return st


def writers(path: Path) -> list[str]:
    return [t.user_attrs.get("writer", "") for t in kt.Study.load(path).trials]


# ---- several processes on one file -----------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    import kubetune as kt

    path, name, mode, n_iter, sync = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])

    def wait_for(p: Path) -> None:
        deadline = time.monotonic() + 30
        while not p.exists():
            if time.monotonic() > deadline:
                sys.exit(f"{name}: timed out waiting for {p}")
            time.sleep(0.002)

    def one_trial(i: int) -> "kt.Study":
        st = kt.Study.load(path)
        t = st.ask()
        st.tell(t, float(i))
        st.set_user_attr(t.id, "writer", f"{name}-{i}")
        return st

    out = {"saved": [], "conflicts": 0, "errors": []}
    if mode == "pair":  # load, wait until the peer has loaded too, then save in the order given by `sync`
        st = one_trial(0)
        (sync / f"loaded-{name}").touch()
        wait_for(sync / "go")
        if name == "second":
            wait_for(sync / "saved-first")
        try:
            st.save(path)
            out["saved"].append(f"{name}-0")
        except RuntimeError as e:
            out["errors"].append(str(e))
        (sync / f"saved-{name}").touch()
    else:  # "once": a conflict loses this iteration loudly; "retry": reload and redo it
        (sync / f"ready-{name}").touch()
        wait_for(sync / "go")
        attempts = 0
        for i in range(n_iter):
            while True:
                attempts += 1
                if attempts > 50 * n_iter:
                    sys.exit(f"{name}: too many attempts")
                st = one_trial(i)
                time.sleep(0.01)
                try:
                    st.save(path)
                    out["saved"].append(f"{name}-{i}")
                    break
                except RuntimeError as e:
                    assert "changed by someone else" in str(e), str(e)
                    out["conflicts"] += 1
                    if mode == "once":
                        break
    print(json.dumps(out))
    """
)


def start_workers(tmp_path: Path, path: Path, names: list[str], mode: str, n_iter: int) -> list[subprocess.Popen]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    sync = tmp_path / "sync"
    sync.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": PKG_DIR}
    return [
        subprocess.Popen(
            [sys.executable, str(script), str(path), name, mode, str(n_iter), str(sync)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for name in names
    ]


def release_when(tmp_path: Path, names: list[str], prefix: str, procs: list[subprocess.Popen]) -> None:
    sync = tmp_path / "sync"
    deadline = time.monotonic() + TIMEOUT
    while not all((sync / f"{prefix}-{n}").exists() for n in names):
        assert time.monotonic() < deadline, "workers did not start"
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.005)
    (sync / "go").touch()


def results(procs: list[subprocess.Popen]) -> list[dict[str, Any]]:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout))
    return out


def test_two_processes_exactly_one_save_wins_and_the_file_keeps_its_trials(tmp_path: Path) -> None:
    path = tmp_path / "study.json"
    seeded_file(path, 5)
    procs = start_workers(tmp_path, path, ["first", "second"], "pair", 1)
    release_when(tmp_path, ["first", "second"], "loaded", procs)
    first, second = results(procs)
    assert first == {"saved": ["first-0"], "conflicts": 0, "errors": []}
    assert second["saved"] == [] and len(second["errors"]) == 1
    msg = second["errors"][0]
    assert str(path) in msg and "changed by someone else" in msg
    assert "revision 2" in msg and "revision 1" in msg and "overwrite=True" in msg
    assert writers(path) == ["", "", "", "", "", "first-0"]
    doc = json.loads(path.read_text())
    assert doc["revision"] == 2 and len(doc["lineage"]) == 32


def test_two_processes_racing_to_save_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "study.json"
    seeded_file(path, 2)
    procs = start_workers(tmp_path, path, ["a", "b"], "once", 1)
    release_when(tmp_path, ["a", "b"], "ready", procs)
    res = results(procs)
    saved = [s for r in res for s in r["saved"]]
    conflicts = sum(r["conflicts"] for r in res)
    # Both may load before either saves (one conflict) or one may load after the other saved (no conflict):
    # either way, every save that returned is in the file and nothing else is.
    assert len(saved) + conflicts == 2
    assert sorted(writers(path)[2:]) == sorted(saved)
    assert len(kt.Study.load(path).trials) == 2 + len(saved)


@pytest.mark.parametrize("mode", ["once", "retry"])
def test_three_processes_ten_trials_each_never_lose_silently(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "study.json"
    kt.Study(space(), seed=3).save(path)
    names = ["p0", "p1", "p2"]
    procs = start_workers(tmp_path, path, names, mode, 10)
    release_when(tmp_path, names, "ready", procs)
    res = results(procs)
    saved = sorted(s for r in res for s in r["saved"])
    conflicts = sum(r["conflicts"] for r in res)
    final = kt.Study.load(path)
    tags = [t.user_attrs["writer"] for t in final.trials]
    assert [t.id for t in final.trials] == list(range(len(tags)))  # no overlapping ids
    assert sorted(tags) == saved  # every trial whose save returned is there, and only those
    assert conflicts >= 1  # the three really overlapped; before the check this lost trials silently
    if mode == "retry":
        assert len(saved) == 30 and len(set(saved)) == 30
    else:
        assert len(saved) + conflicts == 30
    assert json.loads(path.read_text())["revision"] == 1 + len(saved)


# ---- one process, several Study objects ------------------------------------------------------------------


def test_two_objects_in_one_process(tmp_path: Path) -> None:
    path = tmp_path / "study.json"
    seeded_file(path, 4)
    a, b = kt.Study.load(path), kt.Study.load(f"{tmp_path}/./study.json")
    for st, tag in ((a, "a"), (b, "b")):
        t = st.ask()
        st.tell(t, 1.0)
        st.set_user_attr(t.id, "writer", tag)
    a.save(path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="changed by someone else since this Study loaded or last saved"):
        b.save(path)
    assert path.read_bytes() == before
    assert writers(path)[-1] == "a"
    a.save(path)  # the writer may keep saving
    assert json.loads(path.read_text())["revision"] == 3
    b.save(path, overwrite=True)  # explicit: b replaces the file with a new lineage
    doc = json.loads(path.read_text())
    assert writers(path)[-1] == "b" and doc["revision"] == 4
    with pytest.raises(RuntimeError, match="changed by someone else"):
        a.save(path)
    # Two threads saving their own objects: the lock and the check serialise them, nothing is lost.
    c = kt.Study.load(path)
    errors: list[str] = []

    def save_loop(st: kt.Study) -> None:
        for _ in range(20):
            try:
                st.save(path)
            except RuntimeError as e:
                errors.append(str(e))

    threads = [threading.Thread(target=save_loop, args=(st,)) for st in (c, kt.Study.load(path))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    # Both loaded revision 4: the first to save wins, the other is refused on each of its 20 tries.
    assert len(errors) == 20 and all("changed by someone else" in e for e in errors)
    assert json.loads(path.read_text())["revision"] == 24


def test_first_save_over_a_foreign_file_needs_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "study.json"
    seeded_file(path, 3)
    before = path.read_bytes()
    fresh = kt.Study(space(), seed=9)
    with pytest.raises(RuntimeError, match="did not load or save") as err:
        fresh.save(path)
    assert str(path) in str(err.value) and "overwrite=True" in str(err.value)
    copy = kt.Study.from_json(kt.Study.load(path).to_json())  # a copy is not the object that loaded it
    with pytest.raises(RuntimeError, match="did not load or save"):
        copy.save(path)
    assert path.read_bytes() == before
    other = tmp_path / "notes.txt"
    other.write_text("not a study")
    with pytest.raises(RuntimeError, match="not a kubetune study"):
        fresh.save(other)
    assert other.read_text() == "not a study"
    fresh.save(path, overwrite=True)
    assert len(kt.Study.load(path).trials) == 0
    # Saves are remembered per file: saving elsewhere does not disturb the check on this one.
    loaded = kt.Study.load(path)
    loaded.save(tmp_path / "backup.json")
    loaded.save(path)
    with pytest.raises(TypeError):
        fresh.save(path, True)  # overwrite is keyword-only
    with pytest.raises(ValueError, match="must name a file"):
        fresh.save("")
    # An edit that keeps the revision (by hand, say) is caught too: the check compares the bytes.
    doc = json.loads(path.read_text())
    doc["seed"] = 12345
    path.write_text(json.dumps(doc))
    with pytest.raises(RuntimeError, match="other content under that same revision"):
        loaded.save(path)


def test_file_from_before_revisions_loads_and_continues(tmp_path: Path) -> None:
    st = kt.Study(space(), seed=21, searcher=kt.TPE())
    st.optimize(objective, n_trials=12)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(st.to_json(), separators=(",", ":")))  # what save() wrote before revisions
    old = kt.Study.load(path)
    assert old.to_json() == st.to_json()
    old.save(path)  # unchanged since load: allowed, and from now on it has a revision
    doc = json.loads(path.read_text())
    assert doc["revision"] == 1 and doc["lineage"]
    again = kt.Study.load(path)
    for _ in range(4):
        a, b, c = st.ask(), old.ask(), again.ask()
        assert a.params == b.params == c.params
        for s, t in ((st, a), (old, b), (again, c)):
            s.tell(t, objective(t))
    path.write_text(json.dumps(st.to_json()))
    with pytest.raises(RuntimeError, match="the file now has no revision"):
        again.save(path)


def test_temp_file_never_follows_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = tmp_path / "study.json"
    planted = [f"{path}.tmp", f"{path}.tmp.{os.getpid()}", f"{path}.tmp.{os.getpid()}.0", f"{path}.tmp-0"]
    for name in planted:
        os.symlink(victim, name)
    st = kt.Study(space(), seed=1)
    st.optimize(objective, n_trials=3)
    st.save(path)
    st.optimize(objective, n_trials=2)
    st.save(path)
    assert victim.read_text() == "precious"
    assert all(os.path.islink(n) and os.readlink(n) == str(victim) for n in planted)
    assert not path.is_symlink() and len(kt.Study.load(path).trials) == 5
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["victim.txt", "study.json", "study.json.lock"] + [os.path.basename(n) for n in planted])
    umask = os.umask(0)
    os.umask(umask)
    assert (path.stat().st_mode & 0o777) == 0o666 & ~umask  # not left at the temp file's 0600
    os.chmod(path, 0o600)
    st.save(path)
    assert (path.stat().st_mode & 0o777) == 0o600  # an existing file keeps its mode
    # A symlink at the lock's name is refused, not followed.
    other = tmp_path / "other.json"
    os.symlink(victim, f"{other}.lock")
    with pytest.raises(OSError, match="lock"):
        st.save(other)
    assert victim.read_text() == "precious" and not other.exists()


def test_failed_write_removes_the_temp_file_and_keeps_the_old_one(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, resource, signal, sys
        import kubetune as kt
        d = sys.argv[1]
        path = os.path.join(d, "study.json")
        s = kt.SearchSpace(); s.add_float("x", 0, 1)
        st = kt.Study(s, seed=0)
        st.optimize(lambda t: t.params["x"], n_trials=2)
        st.save(path)
        before = open(path, "rb").read()
        st.optimize(lambda t: t.params["x"], n_trials=200)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        fds = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
        try:
            st.save(path)
            sys.exit("save beyond RLIMIT_FSIZE succeeded")
        except OSError as e:
            assert "write failed" in str(e) and path in str(e), str(e)
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        assert len(os.listdir("/proc/self/fd")) == fds, "descriptor leaked"
        assert open(path, "rb").read() == before
        assert sorted(os.listdir(d)) == ["study.json", "study.json.lock"], os.listdir(d)
        st.save(path)  # the failed save changed nothing: this object may still save
        assert len(kt.Study.load(path).trials) == 202
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": PKG_DIR}
    d = tmp_path / "d"
    d.mkdir()
    r = subprocess.run([sys.executable, "-c", script, str(d)], capture_output=True, text=True, env=env,
                       timeout=TIMEOUT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# ---- optimize(callbacks=...) -----------------------------------------------------------------------------


def outcome_objective(t: Any) -> float:
    # trial 2 is pruned, trial 4 fails with a caught error, the rest complete
    if t.number == 2:
        raise kt.TrialPruned()
    if t.number == 4:
        raise KeyError("boom")
    return objective(t)


def test_callbacks_order_count_and_finished_trial() -> None:
    st = kt.Study(space(), seed=4)
    seen: list[tuple[int, str, float | None]] = []
    second: list[int] = []

    def cb(study: Any, trial: Any) -> None:
        assert study is st
        assert trial.finished_at >= trial.created_at > 0
        seen.append((trial.number, trial.state.name, trial.value))

    st.optimize(outcome_objective, n_trials=7, catch=(KeyError,), callbacks=[cb, lambda s, t: second.append(t.id)])
    assert [s[:2] for s in seen] == [(0, "COMPLETE"), (1, "COMPLETE"), (2, "PRUNED"), (3, "COMPLETE"),
                                     (4, "FAILED"), (5, "COMPLETE"), (6, "COMPLETE")]
    assert [s[2] for s in seen] == [t.value for t in st.trials]
    assert second == list(range(7))
    st.optimize(outcome_objective, n_trials=2, callbacks=iter([cb]))  # any iterable
    assert len(seen) == 9


def test_callbacks_match_optuna() -> None:
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    o_seen: list[tuple[int, str]] = []
    k_seen: list[tuple[int, str]] = []
    names = {"COMPLETE": "COMPLETE", "PRUNED": "PRUNED", "FAIL": "FAILED"}

    def o_obj(trial: Any) -> float:
        x = trial.suggest_float("x", -5.0, 5.0)
        if trial.number == 2:
            raise optuna.TrialPruned()
        if trial.number == 4:
            raise KeyError("boom")
        return x * x

    o = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    o.optimize(o_obj, n_trials=6, catch=(KeyError,), callbacks=[lambda s, t: o_seen.append((t.number, names[t.state.name]))])
    k = kt.Study(space(), seed=0)
    k.optimize(outcome_objective, n_trials=6, catch=(KeyError,), callbacks=[lambda s, t: k_seen.append((t.number, t.state.name))])
    assert k_seen == o_seen


def test_callback_exception_stops_optimize_and_is_reraised() -> None:
    st = kt.Study(space(), seed=5)
    calls: list[int] = []

    def cb(study: Any, trial: Any) -> None:
        calls.append(trial.number)
        if trial.number == 3:
            raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        st.optimize(objective, n_trials=20, callbacks=[cb])
    assert calls == [0, 1, 2, 3] and len(st.trials) == 4
    assert all(t.state == kt.TrialState.COMPLETE for t in st.trials)
    # An uncaught objective error stops before the callbacks of that trial, as in Optuna.
    later: list[int] = []
    with pytest.raises(ZeroDivisionError):
        st.optimize(lambda t: 1 / 0, n_trials=3, callbacks=[lambda s, t: later.append(t.number)])
    assert later == []


def test_callbacks_with_two_threads_run_in_the_worker_and_one_at_a_time() -> None:
    st = kt.Study(space(), seed=6)
    ran_in: dict[int, int] = {}
    called_in: dict[int, int] = {}
    inside = [0, 0]  # now, max
    guard = threading.Lock()

    def obj(t: Any) -> float:
        ran_in[t.number] = threading.get_ident()
        time.sleep(0.004)
        return objective(t)

    def cb(study: Any, trial: Any) -> None:
        with guard:
            inside[0] += 1
            inside[1] = max(inside)
        time.sleep(0.002)
        called_in[trial.number] = threading.get_ident()
        with guard:
            inside[0] -= 1

    st.optimize(obj, n_trials=30, n_threads=2, callbacks=[cb])
    assert sorted(called_in) == list(range(30))
    assert called_in == ran_in
    assert len(set(ran_in.values())) == 2
    assert inside == [0, 1]


@pytest.mark.parametrize(
    "bad, match",
    [(5, "callbacks must be an iterable of callables"), (print, "wrap a single callback in a list"),
     ("cb", "callbacks must be an iterable"), ([print, 3], r"callbacks\[1\] must be callable")],
)
def test_callbacks_are_validated(bad: Any, match: str) -> None:
    st = kt.Study(space(), seed=0)
    with pytest.raises(TypeError, match=match):
        st.optimize(objective, n_trials=2, callbacks=bad)
    assert len(st.trials) == 0


# ---- trials_dataframe ------------------------------------------------------------------------------------


def test_trials_dataframe_single_objective_with_every_state() -> None:
    pd = pytest.importorskip("pandas")
    s = kt.SearchSpace()
    s.add_float("lr", 1e-4, 1e-1, log=True).add_categorical("opt", ["sgd", "adam"]).add_float("momentum", 0.0, 0.9)
    s.set_condition("momentum", "opt", ["sgd"])
    st = kt.Study(s, seed=2)
    st.add_trial({"lr": 0.01, "opt": "sgd", "momentum": 0.5}, 0.25)
    st.add_trial({"lr": 0.02, "opt": "adam"}, state="pruned", intermediate={0: 0.9})
    st.add_trial({"lr": 0.03, "opt": "adam"}, state="failed")
    t = st.ask()
    st.set_user_attr(t.id, "note", "running")
    st.enqueue({"lr": 0.05, "opt": "adam"})
    df = st.trials_dataframe()
    assert list(df.columns) == ["number", "value", "datetime_start", "datetime_complete", "duration",
                                "params_lr", "params_momentum", "params_opt", "user_attrs_note",
                                "system_attrs_enqueued", "state"]
    assert df["number"].tolist() == [0, 1, 2, 3, 4]
    assert df["state"].tolist() == ["COMPLETE", "PRUNED", "FAILED", "RUNNING", "PENDING"]
    assert df["value"].iloc[0] == 0.25 and df["value"].iloc[1:].isna().all()
    assert df["params_lr"].iloc[:3].tolist() == [0.01, 0.02, 0.03]
    assert df["params_opt"].tolist()[:3] == ["sgd", "adam", "adam"]
    assert df["params_momentum"].iloc[0] == 0.5 and df["params_momentum"].iloc[1:3].isna().all()
    assert df["user_attrs_note"].iloc[3] == "running" and df["user_attrs_note"].iloc[:3].isna().all()
    assert df["system_attrs_enqueued"].iloc[4] == 1.0
    assert pd.api.types.is_datetime64_any_dtype(df["datetime_start"])
    assert pd.api.types.is_timedelta64_dtype(df["duration"])
    assert df["datetime_complete"].iloc[:3].notna().all() and df["datetime_complete"].iloc[3:].isna().all()
    assert pd.isna(df["datetime_start"].iloc[4]) and df["datetime_start"].iloc[:4].notna().all()
    trials = st.trials
    assert df["datetime_start"].iloc[3] == pd.Timestamp(datetime.datetime.fromtimestamp(trials[3].created_at))
    for i in range(3):
        expect = pd.Timedelta(seconds=trials[i].finished_at - trials[i].created_at)
        assert abs(df["duration"].iloc[i] - expect) < pd.Timedelta(microseconds=2)
    assert kt.Study(s).trials_dataframe().shape == (0, 6)


def test_trials_dataframe_columns_match_optuna_multi_objective() -> None:
    pytest.importorskip("pandas")
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = kt.SearchSpace()
    s.add_float("x", 0.0, 1.0).add_int("n", 1, 5)
    st = kt.Study(s, direction=["minimize", "maximize"], seed=0)
    o = optuna.create_study(directions=["minimize", "maximize"])
    dists = {"x": optuna.distributions.FloatDistribution(0.0, 1.0), "n": optuna.distributions.IntDistribution(1, 5)}
    rows = [({"x": 0.25, "n": 2}, [1.5, 2.5], "complete"), ({"x": 0.5, "n": 3}, None, "pruned"),
            ({"x": 0.75, "n": 4}, None, "failed")]
    ostate = {"complete": optuna.trial.TrialState.COMPLETE, "pruned": optuna.trial.TrialState.PRUNED,
              "failed": optuna.trial.TrialState.FAIL}
    for i, (params, values, state) in enumerate(rows):
        kid = st.add_trial(params, values, state=state)
        st.set_user_attr(kid, "tag", f"t{i}")
        o.add_trial(optuna.trial.create_trial(params=params, distributions=dists, values=values,
                                              state=ostate[state], user_attrs={"tag": f"t{i}"}))
    df, odf = st.trials_dataframe(), o.trials_dataframe()
    assert list(df.columns) == list(odf.columns)
    for col in ("number", "params_x", "params_n", "user_attrs_tag"):
        assert df[col].tolist() == odf[col].tolist(), col
    assert df["values_0"].iloc[0] == 1.5 and df["values_1"].iloc[0] == 2.5
    assert df["values_0"].iloc[1:].isna().all() and odf["values_0"].iloc[1:].isna().all()
    assert df["state"].tolist() == ["COMPLETE", "PRUNED", "FAILED"]


def test_trials_dataframe_without_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    st = kt.Study(space(), seed=0)
    with pytest.raises(ImportError, match="pip install pandas"):
        st.trials_dataframe()


def test_optimize_results_survive_a_checked_save(tmp_path: Path) -> None:
    # The callbacks see what save writes: the study after each trial, saved from the callback.
    path = tmp_path / "study.json"
    st = kt.Study(space(), seed=8)
    st.optimize(objective, n_trials=6, callbacks=[lambda s, t: s.save(path)])
    assert json.loads(path.read_text())["revision"] == 6
    assert [t.value for t in kt.Study.load(path).trials] == [t.value for t in st.trials]
    assert all(math.isfinite(t.value) for t in st.trials)
