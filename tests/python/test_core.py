"""Core Python API: SearchSpace, Study ask/tell/optimize, persistence, errors, threads."""
import json
import math
import threading

import pytest

import kubetune as kt


def space():
    s = kt.SearchSpace()
    s.add_float("x", -5.0, 10.0).add_float("lr", 1e-5, 1e-1, log=True).add_int("n", 1, 8)
    s.add_categorical("opt", ["sgd", "adam"]).add_discrete("bs", [16, 32, 64])
    return s


def objective(t):
    p = t.params
    return (p["x"] - 1) ** 2 + abs(math.log10(p["lr"]) + 3) + p["n"] * 0.1 + (p["opt"] == "sgd") + p["bs"] / 64


def test_space_params_types_and_chaining():
    s = space()
    assert len(s) == 5 and s.names == ["x", "lr", "n", "opt", "bs"]
    p = s.sample(seed=3)
    assert isinstance(p["x"], float) and isinstance(p["n"], int) and isinstance(p["opt"], str)
    assert p["bs"] in (16.0, 32.0, 64.0)
    assert s.validate(p) == p
    assert kt.SearchSpace.from_json(s.to_json()) == s
    assert kt.SearchSpace.from_json(json.dumps(s.to_json())) == s


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda s: s.add_float("a", 1.0, 0.0), "'a'.*inverted"),
        (lambda s: s.add_float("a", 1.0, 1.0), "empty"),
        (lambda s: s.add_float("lr", 0.0, 1.0, log=True), "log-scale bounds must be > 0"),
        (lambda s: s.add_float("a", 0.0, 1.0, step=5.0), "larger than the range"),
        (lambda s: s.add_int("k", 0, 3, step=4), "larger than the range"),
        (lambda s: s.add_categorical("c", []), "empty"),
        (lambda s: s.add_float("x", 0.0, 1.0), "duplicate parameter name 'x'"),
    ],
)
def test_space_bad_input_raises_valueerror_naming_the_problem(build, match):
    s = kt.SearchSpace().add_float("x", 0.0, 1.0)
    with pytest.raises(ValueError, match=match):
        build(s)
    assert len(s) == 1


def test_unknown_parameter_in_assignment():
    st = kt.Study(space(), seed=0)
    with pytest.raises(ValueError, match="unknown parameter 'zzz'"):
        st.enqueue({"zzz": 1.0})
    with pytest.raises(ValueError, match="'opt'"):
        st.enqueue({"x": 1.0, "lr": 0.01, "n": 2, "opt": "rmsprop", "bs": 16})


def test_from_katib():
    params = [
        {"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0.01", "max": "0.05"}},
        {"name": "layers", "parameterType": "int", "feasibleSpace": {"min": "2", "max": "5"}},
        {"name": "opt", "parameterType": "categorical", "feasibleSpace": {"list": ["sgd", "adam", "ftrl"]}},
    ]
    s = kt.SearchSpace.from_katib(params)
    assert s.names == ["lr", "layers", "opt"]
    assert kt.SearchSpace.from_katib(json.dumps(params)) == s


def test_optimize_tell_best_and_states():
    st = kt.Study(space(), searcher="random", seed=1)
    st.optimize(objective, n_trials=60)
    assert len(st.trials) == 60
    assert all(t.state == kt.TrialState.COMPLETE for t in st.trials)
    best = st.best
    assert best.value == min(t.value for t in st.trials)
    assert st.best_params == best.params and st.best_value == best.value
    t = st.ask()
    assert st.tell(t.id, float("nan")) == kt.TrialState.FAILED
    assert st.trial(t.id).value is None
    with pytest.raises(KeyError, match="unknown trial id 999"):
        st.tell(999, 1.0)
    with pytest.raises(RuntimeError, match="already finished"):
        st.tell(t.id, 1.0)
    with pytest.raises(TypeError):
        st.tell(st.ask().id, "bad")


def test_maximize_and_pruned_and_failed_objectives():
    st = kt.Study(space(), direction="maximize", seed=2)

    def f(trial):
        if trial.id == 3:
            raise kt.TrialPruned()
        if trial.id == 5:
            return float("inf")
        trial.report(0, 1.0)
        return -objective(trial)

    st.optimize(f, n_trials=10)
    states = [t.state for t in st.trials]
    assert states[3] == kt.TrialState.PRUNED and states[5] == kt.TrialState.FAILED
    assert st.best.value == max(t.value for t in st.trials if t.value is not None)

    def boom(trial):
        raise ZeroDivisionError("x")

    with pytest.raises(ZeroDivisionError):
        st.optimize(boom, n_trials=3)
    assert st.trials[-1].state == kt.TrialState.FAILED
    assert "ZeroDivisionError" in st.trials[-1].user_attrs["fail_reason"]
    st.optimize(boom, n_trials=2, catch=(ZeroDivisionError,))


def test_save_load_continues_identically(tmp_path):
    st = kt.Study(space(), seed=5)
    st.optimize(objective, n_trials=20)
    st.ask()  # one running trial is saved too
    p = tmp_path / "study.json"
    st.save(p)
    st2 = kt.Study.load(str(p))
    assert st2.to_json() == st.to_json()
    for _ in range(5):
        a, b = st.ask(), st2.ask()
        assert a.params == b.params
        st.tell(a.id, objective(a))
        st2.tell(b.id, objective(b))


def test_corrupt_file_clear_error_and_untouched(tmp_path):
    st = kt.Study(space(), seed=5)
    st.optimize(objective, n_trials=5)
    p = tmp_path / "study.json"
    st.save(str(p))
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 3])
    before = p.read_bytes()
    with pytest.raises(ValueError, match="truncated or corrupt"):
        kt.Study.load(str(p))
    assert p.read_bytes() == before
    with pytest.raises(OSError):
        kt.Study.load(str(tmp_path / "missing.json"))


def test_enqueue_warm_start_and_add_trial():
    st = kt.Study(space(), seed=0)
    params = {"x": 1.0, "lr": 0.001, "n": 1, "opt": "adam", "bs": 16}
    st.enqueue(params)
    t = st.ask()
    assert t.params == params
    st.tell(t, objective(t))
    st.add_trial(params, 0.0)
    assert st.best.value == 0.0


def test_exhaustion_stops_optimize():
    s = kt.SearchSpace().add_categorical("c", ["a", "b"]).add_int("k", 0, 2)
    st = kt.Study(s, seed=0)
    st.optimize(lambda t: 1.0, n_trials=50)
    assert len(st.trials) == 6 and st.exhausted
    with pytest.raises(kt.SearchExhausted, match="exhausted"):
        st.ask()


def test_eight_threads_no_lost_or_duplicated_trials():
    st = kt.Study(space(), seed=9)
    st.optimize(objective, n_trials=400, n_threads=8)
    ids = [t.id for t in st.trials]
    assert ids == list(range(400))
    assert all(t.state == kt.TrialState.COMPLETE for t in st.trials)

    # raw ask/tell from threads as well
    st2 = kt.Study(space(), seed=10)
    errors = []

    def work():
        try:
            for _ in range(50):
                for t in st2.ask(2):
                    st2.tell(t.id, objective(t))
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(st2.trials) == 800 and len({t.id for t in st2.trials}) == 800


def test_progress_bar(capsys):
    st = kt.Study(space(), seed=0)
    st.optimize(objective, n_trials=5, progress=True)
    err = capsys.readouterr().err
    assert "5/5" in err


def test_library_is_silent(capsys):
    st = kt.Study(space(), seed=0)
    st.optimize(objective, n_trials=10)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_bad_arguments():
    with pytest.raises(ValueError, match="direction"):
        kt.Study(space(), direction="up")
    with pytest.raises(KeyError, match="unknown searcher type"):
        kt.Study(space(), searcher="nope")
    with pytest.raises(TypeError):
        kt.Study(space(), searcher=3.5)
    st = kt.Study(space())
    with pytest.raises(ValueError, match="n_trials"):
        st.optimize(objective, n_trials=-1)
    with pytest.raises(ValueError, match="n_threads"):
        st.optimize(objective, n_trials=1, n_threads=0)


def test_optimize_deprecated_keyword_aliases(capsys):
    # n_jobs / show_progress became n_threads / progress (one naming rule); the old names work for one release.
    st = kt.Study(space(), seed=0)
    with pytest.warns(DeprecationWarning, match=r"optimize\(n_jobs=\.\.\.\) is deprecated .* use n_threads="):
        st.optimize(objective, n_trials=6, n_jobs=2)
    assert [t.state for t in st.trials] == [kt.TrialState.COMPLETE] * 6
    with pytest.warns(DeprecationWarning, match=r"show_progress=\.\.\.\) is deprecated .* use progress="):
        st.optimize(objective, n_trials=3, show_progress=True)
    assert "3/3" in capsys.readouterr().err
    with pytest.warns(DeprecationWarning, match="n_jobs"), pytest.raises(ValueError, match="n_threads must be"):
        st.optimize(objective, n_trials=1, n_jobs=0)  # the alias is checked as the new name
    # Both spellings of one setting: an error naming both, by keyword or positionally; nothing runs.
    with pytest.raises(TypeError, match=r"got both n_threads= and its deprecated alias n_jobs="):
        st.optimize(objective, n_trials=1, n_threads=2, n_jobs=2)
    with pytest.raises(TypeError, match=r"got both n_threads= and its deprecated alias n_jobs="):
        st.optimize(objective, 1, 1, n_jobs=2)
    with pytest.raises(TypeError, match=r"got both progress= and its deprecated alias show_progress="):
        st.optimize(objective, n_trials=1, progress=False, show_progress=False)
    assert len(st.trials) == 9
    # The new names are the signature that help() and the stubs show.
    import inspect

    params = list(inspect.signature(kt.Study.optimize).parameters)
    assert params[:5] == ["self", "func", "n_trials", "n_threads", "progress"]
    assert "n_jobs" not in params and "show_progress" not in params


def test_cuda_queries_do_not_raise():
    assert isinstance(kt.cuda_available(), bool)
    assert kt.cuda_device_count() >= 0
    if not kt.built_with_cuda():
        assert kt.cuda_available() is False


def test_optimize_threads_wait_for_hyperband_rungs_instead_of_stopping():
    # With several workers, Hyperband often has nothing to run while a rung waits for stragglers; optimize
    # must wait for them and finish the whole run (R=27, eta=3: 69 trials over 4 brackets).
    import random
    import time

    s = kt.SearchSpace().add_float("x", 0.0, 1.0).add_int("epochs", 1, 27)
    hb = kt.Hyperband("epochs", max_resource=27, eta=3)
    st = kt.Study(s, searcher=hb, seed=3)
    rnd = random.Random(0)

    def f(t):
        time.sleep(rnd.random() * 0.002)
        return (t.params["x"] - 0.3) ** 2 + 1.0 / t.params["epochs"]

    st.optimize(f, n_trials=1000, n_threads=8)
    expected = sum(n for b in hb.brackets for n, _ in b["rungs"])
    assert expected == 69  # (27+9+3+1) + (12+4+1) + (6+2) + 4
    assert len(st.trials) == expected
    assert all(t.state == kt.TrialState.COMPLETE for t in st.trials)
