"""Katib's ``darts`` algorithm (kubetune.katib.darts) and the DARTS trial entry point (kubetune.katib.darts_trial).

Expected strings are written by hand from Katib's wire format (kubeflow/katib darts service.py: JSON with ``'``
quotes, Experiment strings replacing defaults in place; darts-gpu.yaml's nasConfig). The trial runs as a real
subprocess on scikit-learn's digits; its stdout is read with Katib's default StdOut metrics-collector filter.
"""
from __future__ import annotations

import ast
import json
import math
import os
import re
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

from conftest import ROOT

katib_api_pb2 = pytest.importorskip("kubeflow.katib.katib_api_pb2")
pytest.importorskip("sklearn")

from kubetune import nas  # noqa: E402
from kubetune.katib import darts_trial  # noqa: E402
from kubetune.katib.darts import (  # noqa: E402
    DARTS_SETTING_DEFAULTS,
    darts_assignments,
    darts_replay_done,
    darts_search_space,
    darts_suggestions,
    parse_darts_setting,
    validate_darts_settings,
)

# Katib's default StdOut filter (pkg/metricscollector/v1beta1/common/const.go DefaultFilter); Go's RE2 and
# Python's re read it the same way.
KATIB_DEFAULT_FILTER = re.compile(r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)")
# metricsFormat of Katib's DARTS example Experiments (examples/v1beta1/nas/darts-*.yaml)
KATIB_GENOTYPE_FILTER = re.compile(r"([\w-]+)=(Genotype.*)")

SEARCH_SPACE_STR = (
    "['separable_convolution_3x3', 'dilated_convolution_3x3', 'dilated_convolution_5x5', "
    "'avg_pooling_3x3', 'max_pooling_3x3', 'skip_connection']"
)
DEFAULTS_STR = (
    "{'num_epochs': 50, 'w_lr': 0.025, 'w_lr_min': 0.001, 'w_momentum': 0.9, 'w_weight_decay': 0.0003, "
    "'w_grad_clip': 5.0, 'alpha_lr': 0.0003, 'alpha_weight_decay': 0.001, 'batch_size': 128, 'num_workers': 4, "
    "'init_channels': 16, 'print_step': 50, 'num_nodes': 4, 'stem_multiplier': 3}"
)
TIMEOUT_S = 60


# ------------------------------------------------------------------------------------------ helpers
def _operation(kind: str, sizes: Optional[Sequence[str]] = None) -> "katib_api_pb2.Operation":
    op = katib_api_pb2.Operation(operation_type=kind)
    if sizes is not None:
        op.parameter_specs.parameters.add(
            name="filter_size",
            parameter_type=katib_api_pb2.CATEGORICAL,
            feasible_space=katib_api_pb2.FeasibleSpace(list=list(sizes)),
        )
    return op


def _katib_example_operations() -> List["katib_api_pb2.Operation"]:
    # nasConfig.operations of Katib's darts-gpu.yaml
    return [
        _operation("separable_convolution", ["3"]),
        _operation("dilated_convolution", ["3", "5"]),
        _operation("avg_pooling", ["3"]),
        _operation("max_pooling", ["3"]),
        _operation("skip_connection"),
    ]


def _experiment(
    settings: Sequence[Tuple[str, str]] = (),
    *,
    num_layers: int = 3,
    operations: Optional[Sequence["katib_api_pb2.Operation"]] = None,
    with_nas_config: bool = True,
) -> "katib_api_pb2.Experiment":
    spec = katib_api_pb2.ExperimentSpec(
        algorithm=katib_api_pb2.AlgorithmSpec(
            algorithm_name="darts",
            algorithm_settings=[katib_api_pb2.AlgorithmSetting(name=n, value=v) for n, v in settings],
        ),
        parallel_trial_count=1,
        max_trial_count=1,
    )
    if with_nas_config:
        ops = _katib_example_operations() if operations is None else list(operations)
        spec.nas_config.CopyFrom(
            katib_api_pb2.NasConfig(
                graph_config=katib_api_pb2.GraphConfig(num_layers=num_layers),
                operations=katib_api_pb2.NasConfig.Operations(operation=ops),
            )
        )
    return katib_api_pb2.Experiment(name="darts-example", spec=spec)


def _run_trial(args: Sequence[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "python"), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "kubetune.katib.darts_trial", *args],
        capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=str(ROOT),
    )


def _metrics(stdout: str) -> Dict[str, List[str]]:
    """name -> values, as Katib's default StdOut filter collects them (every match on every line)."""
    out: Dict[str, List[str]] = {}
    for line in stdout.splitlines():
        for m in KATIB_DEFAULT_FILTER.finditer(line):
            out.setdefault(m.group(1).strip(), []).append(m.group(2).strip())
    return out


def _katib_image_reads(assignments: Dict[str, str]) -> Tuple[dict, list, int]:
    """What Katib's own trial image (run_trial.py) does with the three strings: swap quotes, json.loads, then
    int()/float() per setting."""
    settings = json.loads(assignments["algorithm-settings"].replace("'", '"'))
    for name in ("num_epochs", "batch_size", "num_workers", "init_channels", "print_step", "num_nodes",
                 "stem_multiplier"):
        int(settings[name])
    for name in ("w_lr", "w_lr_min", "w_momentum", "w_weight_decay", "w_grad_clip", "alpha_lr",
                 "alpha_weight_decay"):
        float(settings[name])
    space = json.loads(assignments["search-space"].replace("'", '"'))
    return settings, space, int(assignments["num-layers"])


# ------------------------------------------------------------------------------------------ assignments
def test_assignments_match_katib_strings_for_the_example_experiment():
    got = darts_assignments(_experiment([("num_epochs", "3")]))
    assert [n for n, _ in got] == ["algorithm-settings", "search-space", "num-layers"]
    values = dict(got)
    assert values["algorithm-settings"] == DEFAULTS_STR.replace("'num_epochs': 50", "'num_epochs': '3'")
    assert values["search-space"] == SEARCH_SPACE_STR
    assert values["num-layers"] == "3"
    settings, space, layers = _katib_image_reads(values)
    assert settings["num_epochs"] == "3" and settings["w_lr"] == 0.025
    assert space == [
        "separable_convolution_3x3", "dilated_convolution_3x3", "dilated_convolution_5x5", "avg_pooling_3x3",
        "max_pooling_3x3", "skip_connection",
    ]
    assert layers == 3


def test_assignments_defaults_overrides_in_place_and_none():
    assert dict(darts_assignments(_experiment()))["algorithm-settings"] == DEFAULTS_STR
    got = dict(darts_assignments(_experiment([("stem_multiplier", "1"), ("batch_size", "None"),
                                              ("w_lr", "0.01")], num_layers=1)))
    assert got["algorithm-settings"] == (
        "{'num_epochs': 50, 'w_lr': '0.01', 'w_lr_min': 0.001, 'w_momentum': 0.9, 'w_weight_decay': 0.0003, "
        "'w_grad_clip': 5.0, 'alpha_lr': 0.0003, 'alpha_weight_decay': 0.001, 'batch_size': null, "
        "'num_workers': 4, 'init_channels': 16, 'print_step': 50, 'num_nodes': 4, 'stem_multiplier': '1'}"
    )
    assert got["num-layers"] == "1"
    # Katib's image parses it too (int(None) would fail there, so skip batch_size in that check)
    assert json.loads(got["algorithm-settings"].replace("'", '"'))["batch_size"] is None


def test_search_space_order_and_skip_parameters_ignored():
    ops = [_operation("max_pooling", ["3"]), _operation("skip_connection", ["3"]),
           _operation("separable_convolution", ["5", "3"])]
    assert darts_search_space(_experiment(operations=ops)) == [
        "max_pooling_3x3", "skip_connection", "separable_convolution_5x5", "separable_convolution_3x3",
    ]


def test_library_functions_do_not_print(capsys):
    exp = _experiment([("num_epochs", "2")])
    validate_darts_settings(exp)
    darts_assignments(exp)
    darts_suggestions(exp, [], 1)
    assert capsys.readouterr() == ("", "")


# ------------------------------------------------------------------------------------------ validation
VALID = [
    ("num_epochs", "1"), ("num_epochs", " 7 "), ("w_lr", "0"), ("w_lr", "0.1"), ("w_lr_min", "1e-5"),
    ("w_momentum", "0.0"), ("w_weight_decay", "0"), ("w_grad_clip", "10"), ("alpha_lr", "3e-4"),
    ("alpha_weight_decay", "0.0"), ("batch_size", "1"), ("batch_size", "None"), ("num_workers", "0"),
    ("init_channels", "1"), ("print_step", "1"), ("num_nodes", "1"), ("stem_multiplier", "1"),
]
INVALID = [
    ("num_epochs", "0"), ("num_epochs", "-2"), ("num_epochs", "1.5"), ("num_epochs", "x"), ("num_epochs", "None"),
    ("w_lr", "-0.1"), ("w_lr", "fast"), ("w_lr", "nan"), ("w_lr_min", "-1e-3"), ("w_lr_min", "inf"),
    ("w_momentum", "-0.8"), ("w_momentum", ""), ("w_weight_decay", "-0.25"), ("w_grad_clip", "-5"),
    ("alpha_lr", "-0.01"), ("alpha_weight_decay", "-0.02"), ("alpha_weight_decay", "None"),
    ("batch_size", "0"), ("batch_size", "64.5"), ("num_workers", "-1"), ("num_workers", "two"),
    ("init_channels", "0"), ("print_step", "0"), ("num_nodes", "0"), ("num_nodes", "2.0"),
    ("stem_multiplier", "0"), ("stem_multiplier", "-3"),
]


def test_every_katib_setting_is_covered():
    assert {n for n, _ in VALID} == set(DARTS_SETTING_DEFAULTS) == {n for n, _ in INVALID}


@pytest.mark.parametrize("name,value", VALID)
def test_valid_setting(name, value):
    validate_darts_settings(_experiment([(name, value)]))
    darts_assignments(_experiment([(name, value)]))


@pytest.mark.parametrize("name,value", INVALID)
def test_invalid_setting_names_setting_and_value(name, value):
    with pytest.raises(ValueError) as e:
        validate_darts_settings(_experiment([(name, value)]))
    assert name in str(e.value) and repr(value) in str(e.value)
    with pytest.raises(ValueError):
        darts_assignments(_experiment([(name, value)]))


def test_unknown_setting_is_rejected():
    with pytest.raises(ValueError, match="unknown algorithm setting 'num_epoch'"):
        validate_darts_settings(_experiment([("num_epoch", "10")]))


def test_parse_setting_values():
    assert parse_darts_setting("num_epochs", "3") == 3 and parse_darts_setting("num_epochs", 3.0) == 3
    assert parse_darts_setting("w_lr", "0.5") == 0.5 and parse_darts_setting("w_lr", 1) == 1.0
    assert parse_darts_setting("batch_size", None) is None
    with pytest.raises(ValueError, match="'num_nodes' = True"):
        parse_darts_setting("num_nodes", True)
    with pytest.raises(ValueError, match="'w_lr' = \\[0.1\\]"):
        parse_darts_setting("w_lr", [0.1])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(with_nas_config=False), "nas_config is missing"),
        (dict(operations=[]), "nas_config.operations is empty"),
        (dict(num_layers=0), "num_layers = 0"),
        (dict(num_layers=-1), "num_layers = -1"),
        (dict(operations=[_operation("convolution", ["3"])]), "operation_type = 'convolution'"),
        (dict(operations=[_operation("none")]), "operation_type = 'none'"),
        (dict(operations=[_operation("")]), r"operations\[0\].operation_type is empty"),
        (dict(operations=[_operation("skip_connection"), _operation("separable_convolution")]),
         r"operations\[1\] \(separable_convolution\) has no parameters"),
        (dict(operations=[_operation("max_pooling", [])]), "empty feasible_space.list"),
        (dict(operations=[_operation("dilated_convolution", ["3", "7"])]), "filter size '7'"),
        (dict(operations=[_operation("avg_pooling", ["5"])]), "filter size '5'"),
        (dict(operations=[_operation("max_pooling", ["3"]), _operation("max_pooling", ["3"])]),
         r"operations\[1\] lists operation 'max_pooling_3x3' a second time"),
    ],
)
def test_invalid_nas_config(kwargs, match):
    exp = _experiment(**kwargs)
    with pytest.raises(ValueError, match=match):
        validate_darts_settings(exp)
    with pytest.raises(ValueError, match=match):
        darts_assignments(exp)


def test_non_experiment_is_a_type_error():
    with pytest.raises(TypeError, match="katib_api_pb2.Experiment"):
        validate_darts_settings({"spec": {}})


# ------------------------------------------------------------------------------------------ one trial only
def test_single_trial_then_exhausted():
    exp = _experiment([("num_epochs", "3")])
    assert not darts_replay_done([]) and not darts_replay_done(None)
    first = darts_suggestions(exp, [], 1)
    assert first == [darts_assignments(exp)]
    assert darts_suggestions(exp, [], 3) == first  # one search, however many are asked for
    assert darts_suggestions(exp, [], 0) == []
    trial = katib_api_pb2.Trial(name="darts-example-abc")
    for n, v in first[0]:
        trial.spec.parameter_assignments.assignments.add(name=n, value=v)
    request = katib_api_pb2.GetSuggestionsRequest(experiment=exp, trials=[trial], current_request_number=1)
    assert darts_replay_done(request.trials)
    assert darts_suggestions(request.experiment, request.trials, request.current_request_number) == []
    with pytest.raises(ValueError, match="request_number"):
        darts_suggestions(exp, [], -1)


# ------------------------------------------------------------------------------------------ literals
def test_parse_katib_literal_forms():
    parse = darts_trial.parse_katib_literal
    assert parse("{'a': '1', 'b': null}", "x") == {"a": "1", "b": None}
    assert parse('{"a": 1}', "x") == {"a": 1}
    assert parse("\"{'a': 0.5}\"", "x") == {"a": 0.5}  # Katib's template leaves the quotes in argv
    assert parse("{'a': None, 'b': (1, 2)}", "x") == {"a": None, "b": (1, 2)}
    assert parse("['skip_connection']", "x") == ["skip_connection"]
    with pytest.raises(ValueError, match="--x"):
        parse("__import__('os').getcwd()", "x")
    with pytest.raises(ValueError, match="--x is empty"):
        parse('""', "x")


# ------------------------------------------------------------------------------------------ trial CLI
ROUND_TRIP_SETTINGS = [("num_epochs", "3"), ("w_lr", "0.1"), ("alpha_lr", "0.003"), ("batch_size", "64"),
                       ("init_channels", "4"), ("num_nodes", "2"), ("stem_multiplier", "1")]


@pytest.fixture(scope="module")
def round_trip():
    exp = _experiment(ROUND_TRIP_SETTINGS)  # num_layers 3, the example's five operation types
    assignments = darts_assignments(exp)
    args = [f"--{name}={value}" for name, value in assignments] + ["--dataset", "digits", "--threads", "1",
                                                                   "--seed", "0"]
    return assignments, _run_trial(args)


def test_trial_round_trip_prints_katib_metrics(round_trip):
    _, proc = round_trip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    metrics = _metrics(proc.stdout)
    accs = [float(v) for v in metrics["Validation-accuracy"]]
    assert len(accs) == 3 + 1  # one per epoch, then the best again
    assert all(0.0 < a <= 1.0 for a in accs)
    assert accs[-1] == max(accs[:-1])
    assert accs[-1] > 0.5  # 10 classes: well above chance after 3 epochs
    assert [int(v) for v in metrics["epoch"]] == [1, 2, 3]
    assert float(metrics["lr"][0]) == pytest.approx(0.1)
    losses = [float(v) for v in metrics["Train-loss"]]
    assert losses[-1] < losses[0]


def test_trial_round_trip_genotype_matches_in_process_search(round_trip):
    assignments, proc = round_trip
    assert proc.returncode == 0, proc.stderr
    lines = [m for line in proc.stdout.splitlines() if (m := KATIB_GENOTYPE_FILTER.fullmatch(line))]
    assert [m.group(1) for m in lines] == ["Best-Genotype"]
    text = lines[0].group(2)
    assert " " not in text
    # the same search in this process: same numbers, same genotype of the best epoch
    ops = json.loads(dict(assignments)["search-space"].replace("'", '"')) + ["none"]
    X, y = nas.load_digits()
    res = nas.DARTS(channels=4, layers=3, nodes=2, stem_multiplier=1, batch_size=64, w_lr=0.1, alpha_lr=0.003,
                    ops=ops, seed=0, n_threads=1).search(X, y, epochs=3)
    accs = [float(v) for v in _metrics(proc.stdout)["Validation-accuracy"]]
    assert accs[:-1] == [h["val_acc"] for h in res.history]
    best = max(range(3), key=lambda i: (res.history[i]["val_acc"], -i))
    h = res.history[best]
    g = nas.derive_genotype(h["alpha_normal"], h["alpha_reduce"], 2, 2, ops, 2)
    assert text == g.to_katib_string().replace(" ", "")
    if best == 2:
        assert text == res.genotype.to_katib_string().replace(" ", "")
    # Katib's format: nested per-node lists of (op, input) with Katib op names, range concat
    tree = ast.parse(text, mode="eval").body
    assert isinstance(tree, ast.Call) and tree.func.id == "Genotype"
    fields = {k.arg: k.value for k in tree.keywords}
    assert list(fields) == ["normal", "normal_concat", "reduce", "reduce_concat"]
    for cell in ("normal", "reduce"):
        nodes = ast.literal_eval(fields[cell])
        assert len(nodes) == 2 and all(len(node) == 2 for node in nodes)
        for i, node in enumerate(nodes):
            for op, src in node:
                assert op in ops and op != "none" and 0 <= src < 2 + i
        assert ast.unparse(fields[f"{cell}_concat"]) == "range(2, 4)"


def test_trial_accepts_katib_template_quoting_and_defaults():
    # Katib's example template: --algorithm-settings="${trialParameters.algorithmSettings}" (quotes kept)
    proc = _run_trial([
        "--algorithm-settings=\"{'num_epochs': '1', 'num_nodes': '1', 'init_channels': '1', "
        "'stem_multiplier': '1', 'batch_size': 'None', 'num_workers': '0'}\"",
        "--search-space=\"['max_pooling_3x3', 'skip_connection']\"",
        '--num-layers="1"',
        "--threads=1",
    ])
    assert proc.returncode == 0, proc.stderr
    assert "init_channels 1 rounded up to 2" in proc.stderr
    accs = [float(v) for v in _metrics(proc.stdout)["Validation-accuracy"]]
    assert len(accs) == 2 and 0.0 < accs[-1] <= 1.0
    assert re.search(r"^Best-Genotype=Genotype\(normal=\[\[\('(max_pooling_3x3|skip_connection)',[01]\),",
                     proc.stdout, re.M)


def test_trial_on_npz_dataset(tmp_path, capsys):
    X, y = nas.load_digits()
    path = tmp_path / "d.npz"
    np.savez(path, X=X[:400, 0], y=y[:400])  # [n, h, w]
    code = darts_trial.main([
        "--algorithm-settings", "{'num_epochs': 1, 'num_nodes': 1, 'init_channels': 2, 'batch_size': 32}",
        "--search-space", "['skip_connection', 'avg_pooling_3x3']", "--num-layers", "1",
        "--dataset", str(path), "--threads", "1",
    ])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert ">>> kubetune DARTS trial: 400 samples" in out
    acc = float(_metrics(out)["Validation-accuracy"][-1])
    assert 0.0 < acc <= 1.0 and not math.isnan(acc)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--algorithm-settings", "{'num_epoch': '1'}"], "unknown algorithm setting 'num_epoch'"),
        (["--algorithm-settings", "{'num_epochs': '0'}"], "'num_epochs' = '0'"),
        (["--algorithm-settings", "{'w_lr': 'fast'}"], "'w_lr' = 'fast'"),
        (["--algorithm-settings", "{'batch_size': "], "--algorithm-settings"),
        (["--algorithm-settings", "['num_epochs']"], "must be a dict"),
        (["--search-space", "['conv_3x3']"], "unknown operation 'conv_3x3'"),
        (["--search-space", "['skip_connection', 'skip_connect']"], "twice"),
        (["--search-space", "['none']"], "besides 'none'"),
        (["--search-space", "'skip_connection'"], "non-empty list"),
        (["--num-layers", "0"], "--num-layers = '0'"),
        (["--num-layers", "three"], "--num-layers = 'three'"),
        (["--dataset", "cifar10"], "--dataset = 'cifar10'"),
        (["--dataset", "/nonexistent/d.npz"], "no such file"),
        (["--threads", "-1"], "--threads = -1"),
        (["--limit", "2"], "--limit = 2"),
        (["--seed", "x"], "invalid int value"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_exit_2(args, message, capsys):
    assert darts_trial.main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


@pytest.mark.parametrize("kind,message", [
    ("no-labels", "lacks array(s) ['y']"),
    ("npy", "is a single array"),
    ("text", "cannot be read as .npz"),
])
def test_bad_dataset_file_exits_2(kind, message, tmp_path, capsys):
    path = tmp_path / "bad.npz"
    if kind == "no-labels":
        np.savez(path, X=np.zeros((10, 8, 8), np.float32))
    elif kind == "npy":
        with open(path, "wb") as f:
            np.save(f, np.zeros((10, 8, 8), np.float32))
    else:
        path.write_text("X,y\n")
    assert darts_trial.main(["--dataset", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_bad_arguments_exit_2_as_a_process():
    proc = _run_trial(["--algorithm-settings", "{'num_epochs': 'many'}"])
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "kubetune-darts-trial: error:" in proc.stderr and "'num_epochs' = 'many'" in proc.stderr
    proc = _run_trial(["--num-layers"])
    assert proc.returncode == 2 and "expected one argument" in proc.stderr
