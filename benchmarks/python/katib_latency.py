"""Katib GetSuggestions latency: kubetune's Suggestion service vs the libraries behind Katib's own services.

For each algorithm (Katib name) and history size n, the request is what Katib's controller sends in a running
experiment: the experiment (10 DOUBLE parameters in [-5, 5], objective MINIMIZE "loss", the algorithm with no
settings), n SUCCEEDED trials, 3 RUNNING trials, current_request_number = 3. The n complete trials are the
searcher's own optimisation run: kubetune's searcher under that registry name (the one the service builds)
minimises a shifted 10-D sphere, one trial at a time (GP: sequential up to --gp-sequential trials, then batches
of --gp-batch, as parallel Katib trials would), and the first n trials of that run are the history. The 3 running
trials are the service's own answer to those n trials (an untimed call), and that answer's algorithm settings
(kubetune.state/*; for the GP its model state) are merged into the request as Katib's controller merges them.
The peer is measured on the same request bytes. For the GP, "refit" is the same request without the model state
(the first call of an experiment, or a call where the hyperparameter refit is due: every n/10 new trials).

kubetune (the real servicer, kubetune.katib.SuggestionService):
  * in-process: GetSuggestionsRequest.FromString(bytes) + servicer.GetSuggestions + reply.SerializeToString;
  * gRPC: kubetune.katib.serve on 127.0.0.1, a client sending the serialized request on one kept-alive channel
    (the round trip: transport, decoding, servicer, encoding; the request is serialized once, up front);
  * gRPC, new channel: a channel dialled per call, as Katib's controller does (grpc.Dial in SyncAssignments).
Peers, in-process from the same bytes (their own conversion of the protobuf trials included, as Katib's
services convert them: kubeflow/katib pkg/suggestion/v1beta1/{hyperopt,optuna,skopt}/base_service.py, studied,
not copied), Katib's default settings:
  * tpe -> hyperopt.tpe.suggest: a Trials object rebuilt from every SUCCEEDED trial (running ones are not given
    to hyperopt), then one suggest per requested point with the same seed and n_startup_jobs =
    current_request_number, gamma 0.25, 24 EI candidates, prior weight 1 (hyperopt's defaults);
  * multivariate-tpe -> optuna TPESampler(multivariate=True) (Optuna's other defaults): a fresh in-memory study
    with add_trials(every complete trial + the running ones), then study.ask(fixed_distributions) per point;
  * bayesianoptimization -> skopt.Optimizer(base_estimator="GP", n_initial_points=10, acq_func="gp_hedge",
    acq_optimizer="auto"): tell(all complete points) then ask(n_points=3).
"rebuild" is that whole call (what a stateless service pays on every request, and what Katib's own service pays
after its pod restarts). "warm" times only the library's suggestion step on a model already holding the history
(a lower bound for Katib's long-lived service pod, whose trial bookkeeping is left out).

Each cell repeats the call --calls times (peers: until --peer-calls calls or --peer-budget seconds, at least
--peer-min-calls); p50 / p99 are numpy percentiles of wall time (time.perf_counter). Load average is recorded
around every cell (the machine may be shared). Run under nice on a shared machine, with BLAS / OpenMP threads
pinned so that the peers' BLAS and kubetune's OpenMP do not oversubscribe the cores, e.g.:
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=python nice -n 10 .venv/bin/python \
        benchmarks/python/katib_latency.py --history-cache benchmarks/out/katib_history --out benchmarks/out/katib.json
Quick look: --algorithms tpe --sizes 100 1000 --calls 30 --peer-budget 20
Peers are optional (pip install '.[peers]'); a missing one is reported as "not installed".
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import kubetune as kt

DIM = 10
LOW, HIGH = -5.0, 5.0
SHIFT = np.linspace(-2.0, 2.5, DIM)  # optimum of the shifted sphere
METRIC = "loss"
RUNNING = 3  # running trials in the request = current_request_number
ALGORITHMS = ("tpe", "multivariate-tpe", "bayesianoptimization")
PEER_NAMES = {"tpe": "hyperopt 0.3 tpe.suggest", "multivariate-tpe": "optuna TPESampler(multivariate)",
              "bayesianoptimization": "skopt Optimizer(GP, gp_hedge)"}


def sphere(x: Sequence[float]) -> float:
    d = np.asarray(x, dtype=float) - SHIFT
    return float(d @ d)


# ------------------------------------------------------------------------------------------------ history
def space() -> "kt.SearchSpace":
    s = kt.SearchSpace()
    for i in range(DIM):
        s.add_float(f"x{i}", LOW, HIGH)
    return s


def run_history(algorithm: str, n: int, seed: int, gp_sequential: int, gp_batch: int,
                log: Callable[[str], None]) -> List[List[float]]:
    """The first n points the searcher proposes while minimising the sphere (values are recomputed on demand)."""
    study = kt.Study(space(), kt.make_searcher({"type": algorithm}), seed=seed)
    names = [f"x{i}" for i in range(DIM)]
    points: List[List[float]] = []
    t0 = time.perf_counter()
    while len(points) < n:
        batch = 1 if algorithm != "bayesianoptimization" or len(points) < gp_sequential else gp_batch
        batch = min(batch, n - len(points))
        trials = study.ask(batch)
        for t in trials:
            x = [float(t.params[k]) for k in names]
            study.tell(t, sphere(x))
            points.append(x)
        if len(points) % 1000 < batch:
            log(f"  history {algorithm}: {len(points)} trials, best {study.best_value:.4g}, "
                f"{time.perf_counter() - t0:.0f} s")
    return points


def cached_history(algorithm: str, n: int, args: argparse.Namespace) -> List[List[float]]:
    path = None
    if args.history_cache:
        os.makedirs(args.history_cache, exist_ok=True)
        path = os.path.join(args.history_cache, f"{algorithm}-seed{args.seed}-gp{args.gp_sequential}x"
                                                f"{args.gp_batch}.json")
        if os.path.exists(path):
            with open(path) as f:
                pts = json.load(f)
            if len(pts) >= n:
                return pts[:n]
    pts = run_history(algorithm, n, args.seed, args.gp_sequential, args.gp_batch, log)
    if path:
        with open(path, "w") as f:
            json.dump(pts, f)
    return pts


# ------------------------------------------------------------------------------------------------ request
def build_request(pb: Any, algorithm: str, complete: List[List[float]], running: List[List[str]]) -> Any:
    """Katib's GetSuggestionsRequest: the complete trials (SUCCEEDED, objective metric) and running ones given by
    their assignment text, current_request_number = RUNNING."""
    n = len(complete)
    req = pb.GetSuggestionsRequest(current_request_number=RUNNING, total_request_number=n + len(running) + RUNNING)
    exp = req.experiment
    exp.name = f"latency-{algorithm}"
    exp.spec.algorithm.algorithm_name = algorithm
    exp.spec.objective.type = pb.MINIMIZE
    exp.spec.objective.objective_metric_name = METRIC
    exp.spec.parallel_trial_count = RUNNING
    exp.spec.max_trial_count = n + 100
    for i in range(DIM):
        p = exp.spec.parameter_specs.parameters.add(name=f"x{i}", parameter_type=pb.DOUBLE)
        p.feasible_space.min, p.feasible_space.max = repr(LOW), repr(HIGH)
    texts = [[repr(v) for v in x] for x in complete] + running
    # Katib names a trial <experiment>-<8 random lowercase letters and digits> and sends its start time; the
    # service replays trials in start order (names only break ties), as here: one start per second.
    suffix = random.Random(f"{exp.name}-names")
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    start = datetime.datetime(2026, 11, 30, 10, 0, 0)
    for k, values in enumerate(texts):
        t = req.trials.add(name=f"{exp.name}-{''.join(suffix.choice(alphabet) for _ in range(8))}")
        t.spec.objective.type = pb.MINIMIZE
        t.spec.objective.objective_metric_name = METRIC
        for i, v in enumerate(values):
            t.spec.parameter_assignments.assignments.add(name=f"x{i}", value=v)
        t.status.start_time = (start + datetime.timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if k < n:
            t.status.condition = pb.TrialStatus.SUCCEEDED
            t.status.completion_time = (start + datetime.timedelta(seconds=k + 300)).strftime("%Y-%m-%dT%H:%M:%SZ")
            t.status.observation.metrics.add(name=METRIC, value=repr(sphere(complete[k])))
        else:
            t.status.condition = pb.TrialStatus.RUNNING
    return req


# ------------------------------------------------------------------------------------------------ timing
@dataclass
class Cell:
    times: List[float] = field(default_factory=list)
    distinct: int = 0  # calls whose 3 suggestions were pairwise different
    load: Tuple[float, float] = (0.0, 0.0)  # 1-min load average before / after
    note: str = ""

    def summary(self) -> Dict[str, Any]:
        if not self.times:
            return {"calls": 0, "note": self.note, "load": self.load}
        t = np.asarray(self.times) * 1e3
        return {"calls": len(t), "p50_ms": float(np.percentile(t, 50)), "p99_ms": float(np.percentile(t, 99)),
                "max_ms": float(t.max()), "distinct_calls": self.distinct, "load": self.load, "note": self.note}


def measure(call: Callable[[], List[Tuple[str, ...]]], calls: int, budget_s: float, min_calls: int,
            warmup: int = 1, setup: Optional[Callable[[], None]] = None) -> Cell:
    """Run call() repeatedly (setup(), when given, before each call and outside the timer); call returns the
    suggested points (tuples of values), checked for count and duplicates."""
    cell = Cell()
    load0 = os.getloadavg()[0]
    for _ in range(warmup):
        if setup:
            setup()
        call()
    start = time.perf_counter()
    while len(cell.times) < calls:
        if setup:
            setup()
        t0 = time.perf_counter()
        pts = call()
        cell.times.append(time.perf_counter() - t0)
        if len(pts) != RUNNING:
            raise RuntimeError(f"a call returned {len(pts)} suggestions, expected {RUNNING}")
        cell.distinct += len(set(pts)) == len(pts)
        if len(cell.times) >= min_calls and time.perf_counter() - start > budget_s:
            break
    cell.load = (load0, os.getloadavg()[0])
    return cell


def reply_points(reply: Any) -> List[Tuple[str, ...]]:
    return [tuple(a.value for a in pa.assignments) for pa in reply.parameter_assignments]


# ------------------------------------------------------------------------------------------------ kubetune
class _Context:
    """The two ServicerContext methods the servicer uses on errors (in-process calls)."""

    def __init__(self) -> None:
        self.code: Any = None
        self.details = ""

    def set_code(self, code: Any) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details


def kubetune_inprocess(pb: Any, blob: bytes) -> Callable[[], List[Tuple[str, ...]]]:
    from kubetune.katib import SuggestionService

    servicer = SuggestionService()

    def call() -> List[Tuple[str, ...]]:
        ctx = _Context()
        reply = servicer.GetSuggestions(pb.GetSuggestionsRequest.FromString(blob), ctx)
        reply.SerializeToString()
        if ctx.code is not None:
            raise RuntimeError(f"servicer answered {ctx.code}: {ctx.details}")
        return reply_points(reply)

    return call


class GrpcClient:
    """kubetune-katib's server on 127.0.0.1 and raw-bytes unary calls to GetSuggestions."""

    METHOD = "/api.v1.beta1.Suggestion/GetSuggestions"

    def __init__(self, pb: Any) -> None:
        import grpc
        from kubetune.katib.server import DEFAULT_MAX_MESSAGE_BYTES, serve

        self.grpc, self.pb = grpc, pb
        self.server, self.port = serve(0, host="127.0.0.1")
        self.options = [("grpc.max_send_message_length", DEFAULT_MAX_MESSAGE_BYTES),
                        ("grpc.max_receive_message_length", DEFAULT_MAX_MESSAGE_BYTES)]
        self.channel = self._dial()

    def _dial(self) -> Any:
        ch = self.grpc.insecure_channel(f"127.0.0.1:{self.port}", options=self.options)
        self.grpc.channel_ready_future(ch).result(timeout=10)
        return ch

    def _rpc(self, channel: Any) -> Any:
        return channel.unary_unary(self.METHOD, request_serializer=None,
                                   response_deserializer=self.pb.GetSuggestionsReply.FromString)

    def kept_alive(self, blob: bytes) -> Callable[[], List[Tuple[str, ...]]]:
        rpc = self._rpc(self.channel)
        return lambda: reply_points(rpc(blob, timeout=120))

    def new_channel(self, blob: bytes) -> Callable[[], List[Tuple[str, ...]]]:
        def call() -> List[Tuple[str, ...]]:
            ch = self.grpc.insecure_channel(f"127.0.0.1:{self.port}", options=self.options)
            try:
                return reply_points(self._rpc(ch)(blob, timeout=120, wait_for_ready=True))
            finally:
                ch.close()

        return call

    def close(self) -> None:
        self.channel.close()
        self.server.stop(1).wait()


# ------------------------------------------------------------------------------------------------ peers
def _succeeded(pb: Any, req: Any) -> List[Tuple[str, Dict[str, float], float]]:
    """Katib's conversion of the request trials (internal/trial.py): SUCCEEDED ones with the objective metric."""
    out = []
    for t in req.trials:
        if t.status.condition != pb.TrialStatus.SUCCEEDED:
            continue
        metric = None
        for m in t.status.observation.metrics:
            if m.name == t.spec.objective.objective_metric_name:
                metric = m.value
        if metric is not None:
            out.append((t.name, {a.name: float(a.value) for a in t.spec.parameter_assignments.assignments},
                        float(metric)))
    return out


def _bounds(req: Any) -> List[Tuple[str, float, float]]:
    return [(p.name, float(p.feasible_space.min), float(p.feasible_space.max))
            for p in req.experiment.spec.parameter_specs.parameters]


def _reply(pb: Any, suggestions: Sequence[Sequence[Tuple[str, Any]]]) -> Any:
    """Katib's Assignment.generate: str() of each value."""
    return pb.GetSuggestionsReply(parameter_assignments=[
        pb.GetSuggestionsReply.ParameterAssignments(
            assignments=[pb.ParameterAssignment(name=k, value=str(v)) for k, v in s]) for s in suggestions])


class _Peer:
    """What every peer shares: the reply encoded as Katib's service encodes it, and the stateless call."""

    pb: Any

    def answer(self, suggestions: Sequence[Sequence[Tuple[str, Any]]]) -> List[Tuple[str, ...]]:
        reply = _reply(self.pb, suggestions)
        reply.SerializeToString()
        return reply_points(reply)

    def rebuild(self, blob: bytes) -> Callable[[], List[Tuple[str, ...]]]:
        """The whole call of a stateless service: convert the request, then suggest."""
        return lambda: self.suggest(*self.prepare(blob))  # type: ignore[attr-defined]


class HyperoptPeer(_Peer):
    """Katib's tpe service driven statelessly: domain + Trials rebuilt from the request."""

    def __init__(self, pb: Any) -> None:
        import hyperopt

        self.h, self.pb = hyperopt, pb
        self.rstate = np.random.RandomState(0)

    def prepare(self, blob: bytes) -> Tuple[Any, Any, Any, int]:
        h, pb = self.h, self.pb
        req = pb.GetSuggestionsRequest.FromString(blob)
        bounds = _bounds(req)
        domain = h.Domain(None, {n: h.hp.uniform(n, lo, hi) for n, lo, hi in bounds}, pass_expr_memo_ctrl=None)
        trials = h.Trials()
        done = _succeeded(pb, req)
        tids = trials.new_trial_ids(len(done))
        miscs, specs, results = [], [], []
        for tid, (name, params, value) in zip(tids, done):
            miscs.append({"tid": tid, "cmd": domain.cmd, "workdir": domain.workdir,
                          "idxs": {n: [tid] for n, _, _ in bounds}, "vals": {n: [params[n]] for n, _, _ in bounds}})
            specs.append({"trial-name": name})
            results.append({"loss": value, "status": h.STATUS_OK})
        if done:
            docs = trials.new_trial_docs(tids=tids, specs=specs, results=results, miscs=miscs)
            for d in docs:
                d["state"] = h.JOB_STATE_DONE
            trials.insert_trial_docs(docs)
            trials.refresh()
        return req, domain, trials, req.current_request_number

    def suggest(self, req: Any, domain: Any, trials: Any, count: int) -> List[Tuple[str, ...]]:
        ids = trials.new_trial_ids(count)
        seed = int(self.rstate.randint(2**31 - 1))
        names = [n for n, _, _ in _bounds(req)]
        out = []
        for i in range(count):  # one suggest per point, same seed (Katib's loop; katib#1329)
            doc = self.h.tpe.suggest([ids[i]], domain, trials, seed, n_startup_jobs=count)[0]
            out.append([(n, doc["misc"]["vals"][n][0]) for n in names])
        return self.answer(out)

    def warm(self, blob: bytes) -> Tuple[Callable[[], List[Tuple[str, ...]]], Optional[Callable[[], None]]]:
        state = self.prepare(blob)
        return (lambda: self.suggest(*state)), None


class OptunaPeer(_Peer):
    """Katib's multivariate-tpe service driven statelessly: a study rebuilt with add_trials, then ask."""

    def __init__(self, pb: Any) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.o, self.pb = optuna, pb

    def prepare(self, blob: bytes) -> Tuple[Any, Dict[str, Any], int]:
        o, pb = self.o, self.pb
        req = pb.GetSuggestionsRequest.FromString(blob)
        dists = {n: o.distributions.FloatDistribution(lo, hi) for n, lo, hi in _bounds(req)}
        study = o.create_study(sampler=o.samplers.TPESampler(multivariate=True, seed=0), direction="minimize")
        trials = [o.trial.create_trial(params=p, distributions=dists, value=v) for _, p, v in _succeeded(pb, req)]
        for t in req.trials:  # the running trials: asked earlier, not told yet, in Katib's stateful service
            if t.status.condition == pb.TrialStatus.RUNNING:
                trials.append(o.trial.create_trial(
                    params={a.name: float(a.value) for a in t.spec.parameter_assignments.assignments},
                    distributions=dists, state=o.trial.TrialState.RUNNING))
        study.add_trials(trials)
        return study, dists, req.current_request_number

    def suggest(self, study: Any, dists: Dict[str, Any], count: int) -> List[Tuple[str, ...]]:
        out = []
        for _ in range(count):
            t = study.ask(fixed_distributions=dists)
            out.append(list(t.params.items()))
        return self.answer(out)

    def warm(self, blob: bytes) -> Tuple[Callable[[], List[Tuple[str, ...]]], Optional[Callable[[], None]]]:
        # asks add trials to the study: a fresh study per call, built by the untimed set-up
        state: List[Any] = []
        return (lambda: self.suggest(*state.pop())), (lambda: state.append(self.prepare(blob)))


class SkoptPeer(_Peer):
    """Katib's bayesianoptimization service driven statelessly: Optimizer + tell(all) + ask(n_points)."""

    def __init__(self, pb: Any) -> None:
        import skopt

        self.s, self.pb = skopt, pb

    def prepare(self, blob: bytes, fit: bool = True) -> Tuple[Any, List[str], int]:
        s, pb = self.s, self.pb
        req = pb.GetSuggestionsRequest.FromString(blob)
        bounds = _bounds(req)
        opt = s.Optimizer([s.space.Real(lo, hi, "uniform", name=n) for n, lo, hi in bounds], base_estimator="GP",
                          n_initial_points=10, acq_func="gp_hedge", acq_optimizer="auto", random_state=0)
        done = _succeeded(pb, req)
        if done:
            opt.tell([[p[n] for n, _, _ in bounds] for _, p, _ in done], [v for _, _, v in done])
        return opt, [n for n, _, _ in bounds], req.current_request_number

    def suggest(self, opt: Any, names: List[str], count: int) -> List[Tuple[str, ...]]:
        pts = opt.ask(n_points=count)
        return self.answer([list(zip(names, p)) for p in pts])

    def warm(self, blob: bytes) -> Tuple[Callable[[], List[Tuple[str, ...]]], Optional[Callable[[], None]]]:
        state = self.prepare(blob)
        # Optimizer.ask memoises its answer until the next tell: clear that before each timed ask
        return (lambda: self.suggest(*state)), (lambda: setattr(state[0], "cache_", {}))


PEERS: Dict[str, Any] = {"tpe": HyperoptPeer, "multivariate-tpe": OptunaPeer, "bayesianoptimization": SkoptPeer}


# ------------------------------------------------------------------------------------------------ driver
def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def steady_request(pb: Any, algorithm: str, complete: List[List[float]]) -> Tuple[Any, Any, List[str]]:
    """The request of a running experiment, built as Katib's controller would: an untimed call on the complete
    trials gives RUNNING suggestions and the reply's settings (kubetune.state/*: per-trial bookkeeping, the GP's
    model state); the next request carries those suggestions as running trials and the settings merged into the
    experiment's (same name replaced, new name appended: appendAlgorithmSettingsFromSuggestion).
    Returns (request, the same request without the merged settings, the setting names)."""
    from kubetune.katib import SuggestionService

    ctx = _Context()
    reply = SuggestionService().GetSuggestions(build_request(pb, algorithm, complete, []), ctx)
    if ctx.code is not None:
        raise RuntimeError(f"servicer answered {ctx.code}: {ctx.details}")
    running = [[a.value for a in pa.assignments] for pa in reply.parameter_assignments]
    bare = build_request(pb, algorithm, complete, running)
    req = build_request(pb, algorithm, complete, running)
    settings = req.experiment.spec.algorithm.algorithm_settings
    index = {s.name: i for i, s in enumerate(settings)}
    for s in reply.algorithm.algorithm_settings:
        if s.name in index:
            settings[index[s.name]].value = s.value
        else:
            index[s.name] = len(settings)
            settings.add(name=s.name, value=s.value)
    return req, bare, [s.name for s in reply.algorithm.algorithm_settings]


def run_cell(algorithm: str, n: int, points: List[List[float]], args: argparse.Namespace, pb: Any,
             client: GrpcClient) -> Dict[str, Any]:
    req, bare, state = steady_request(pb, algorithm, points[:n])
    blob, cold = req.SerializeToString(), bare.SerializeToString()
    row: Dict[str, Any] = {"algorithm": algorithm, "n": n, "request_bytes": len(blob), "state_settings": state}
    log(f"{algorithm} n={n}: request {len(blob) / 1e6:.2f} MB, state {state}, load {os.getloadavg()[0]:.1f}")
    k = args.calls
    if "kubetune.state/model" in state:
        # the first call of an experiment, or one where the model's refit is due (every n/refit_scale trials)
        row["kubetune_grpc_refit"] = measure(client.kept_alive(cold), args.refit_calls, math.inf,
                                             args.refit_calls).summary()
        log(f"  kubetune without model state: gRPC p50 {row['kubetune_grpc_refit']['p50_ms']:.1f} ms")
    row["kubetune_inprocess"] = measure(kubetune_inprocess(pb, blob), k, math.inf, k).summary()
    row["kubetune_grpc"] = measure(client.kept_alive(blob), k, math.inf, k, warmup=3).summary()
    if args.new_channel:
        row["kubetune_grpc_new_channel"] = measure(client.new_channel(blob), k, math.inf, k).summary()
    log(f"  kubetune: in-process p50 {row['kubetune_inprocess']['p50_ms']:.2f} ms, "
        f"gRPC p50 {row['kubetune_grpc']['p50_ms']:.2f} p99 {row['kubetune_grpc']['p99_ms']:.2f} ms")
    if args.skip_peers:
        return row
    try:
        peer = PEERS[algorithm](pb)
    except ImportError as exc:
        row["peer_rebuild"] = row["peer_warm"] = Cell(note=f"not installed ({exc.name})").summary()
        return row
    limit = args.peer_max_n.get(algorithm)
    if limit is not None and n > limit:
        note = f"not run: n > --peer-max-n {limit}"
        row["peer_rebuild"] = row["peer_warm"] = Cell(note=note).summary()
        log(f"  peer: {note}")
        return row
    for mode in ("rebuild", "warm"):
        call, setup = (peer.rebuild(blob), None) if mode == "rebuild" else peer.warm(blob)
        cell = measure(call, args.peer_calls, args.peer_budget, args.peer_min_calls, warmup=0, setup=setup)
        row[f"peer_{mode}"] = cell.summary()
        log(f"  peer {mode}: {len(cell.times)} calls, p50 {row[f'peer_{mode}']['p50_ms']:.1f} ms")
    return row


def fmt(cell: Dict[str, Any], key: str) -> str:
    if not cell.get("calls"):
        return "-"
    v = cell[key]
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def print_table(rows: List[Dict[str, Any]]) -> None:
    cols = ["algorithm", "n", "MB", "kt in-proc p50/p99", "kt gRPC p50/p99", "kt new-chan p50", "kt refit p50 (calls)",
            "peer rebuild p50/p99 (calls)", "peer warm p50", "rebuild/gRPC", "warm/gRPC", "distinct kt/peer", "load"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        kt_in, kt_g = r["kubetune_inprocess"], r["kubetune_grpc"]
        kt_new, kt_re = r.get("kubetune_grpc_new_channel", {}), r.get("kubetune_grpc_refit", {})
        pr, pw = r.get("peer_rebuild", {}), r.get("peer_warm", {})
        ratio = f"{pr['p50_ms'] / kt_g['p50_ms']:,.1f}x" if pr.get("calls") else pr.get("note", "-")
        ratio_w = f"{pw['p50_ms'] / kt_g['p50_ms']:,.1f}x" if pw.get("calls") else "-"
        dist = f"{kt_g['distinct_calls']}/{kt_g['calls']}, " + (
            f"{pr['distinct_calls']}/{pr['calls']}" if pr.get("calls") else "-")
        loads = [x for c in (kt_in, kt_g, kt_new, kt_re, pr, pw) if c.get("calls") for x in c["load"]]
        refit = f"{fmt(kt_re, 'p50_ms')} ({kt_re['calls']})" if kt_re.get("calls") else "-"
        print(f"| {r['algorithm']} | {r['n']:,} | {r['request_bytes'] / 1e6:.2f} | {fmt(kt_in, 'p50_ms')} / "
              f"{fmt(kt_in, 'p99_ms')} | {fmt(kt_g, 'p50_ms')} / {fmt(kt_g, 'p99_ms')} | {fmt(kt_new, 'p50_ms')} | "
              f"{refit} | {fmt(pr, 'p50_ms')} / {fmt(pr, 'p99_ms')} ({pr.get('calls', 0)}) | {fmt(pw, 'p50_ms')} | "
              f"{ratio} | {ratio_w} | {dist} | {min(loads):.1f}-{max(loads):.1f} |")


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
    p.add_argument("--sizes", nargs="+", type=int, default=[100, 1000, 5000])
    p.add_argument("--calls", type=int, default=100, help="kubetune calls per cell (default %(default)s)")
    p.add_argument("--refit-calls", type=int, default=10,
                   help="kubetune calls without the GP's model state (a refit each) per cell")
    p.add_argument("--peer-calls", type=int, default=100, help="peer calls per cell at most")
    p.add_argument("--peer-budget", type=float, default=60.0, help="seconds per peer cell, then stop")
    p.add_argument("--peer-min-calls", type=int, default=3, help="peer calls per cell at least")
    p.add_argument("--peer-max-n", nargs="*", default=["bayesianoptimization=1000"],
                   help="ALG=N: skip that peer above N trials (default: scikit-optimize above 1,000)")
    p.add_argument("--no-new-channel", dest="new_channel", action="store_false",
                   help="skip the dial-per-call gRPC column")
    p.add_argument("--skip-peers", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gp-sequential", type=int, default=1000, help="GP history: sequential asks up to this n")
    p.add_argument("--gp-batch", type=int, default=50, help="GP history: batch size after --gp-sequential")
    p.add_argument("--history-cache", default=None, help="directory to keep / reuse the optimisation runs")
    p.add_argument("--out", default=None, help="write the rows as JSON here")
    args = p.parse_args(argv)
    limits: Dict[str, int] = {}
    for item in args.peer_max_n:
        name, _, value = item.partition("=")
        if name not in ALGORITHMS or not value.isdigit():
            p.error(f"--peer-max-n entries are ALG=N with ALG in {', '.join(ALGORITHMS)}, got {item!r}")
        limits[name] = int(value)
    args.peer_max_n = limits
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from kubeflow.katib import katib_api_pb2 as pb

    client = GrpcClient(pb)
    rows: List[Dict[str, Any]] = []
    env: Dict[str, Any] = {"uptime_load": os.getloadavg(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
           "kubetune": kt.__version__, "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        for algorithm in args.algorithms:
            points = cached_history(algorithm, max(args.sizes), args)
            for n in sorted(args.sizes):
                rows.append(run_cell(algorithm, n, points, args, pb, client))
    finally:
        client.close()
    env["finished_load"] = os.getloadavg()
    print(f"load average at start {env['uptime_load'][0]:.1f}, at end {env['finished_load'][0]:.1f}; "
          f"{env['cpus']} CPUs; times in ms (wall)")
    print_table(rows)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"env": env, "args": {k: v for k, v in vars(args).items()}, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
