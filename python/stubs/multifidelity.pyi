# Type stubs for the multifidelity module's names in kubetune._kubetune (Hyperband, BOHB, ASHA, pruners, curves).
from typing import Any, Mapping, Optional, Sequence, TypedDict, Union

from kubetune._kubetune import Pruner, SearchSpace, Searcher, Study

class _Bracket(TypedDict):
    s: int
    rungs: list[tuple[int, float]]
    configs: int
    total_resource: float

class _Progress(TypedDict):
    brackets_total: int
    brackets_started: int
    brackets_finished: int
    running: int
    ready: int
    finished: bool
    waiting: bool

_KatibSettings = Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]

def hyperband_brackets(
    max_resource: float, eta: int = 3, *, mode: str = "exact", min_resource: float = 1.0
) -> list[_Bracket]: ...

class Hyperband(Searcher):
    def __init__(
        self,
        resource_name: str,
        *,
        max_resource: float = 81.0,
        min_resource: float = 1.0,
        eta: int = 3,
        mode: str = "exact",
        n_iterations: int = 1,
        bracket: int = -1,
    ) -> None: ...
    @staticmethod
    def from_katib(settings: _KatibSettings) -> Hyperband: ...
    @property
    def brackets(self) -> list[_Bracket]: ...
    def progress(self, study: Study) -> _Progress: ...

class BOHB(Hyperband):
    def __init__(
        self,
        resource_name: str,
        *,
        max_resource: float = 81.0,
        min_resource: float = 1.0,
        eta: int = 3,
        mode: str = "exact",
        n_iterations: int = 0,
        bracket: int = -1,
        top_n_percent: float = 15.0,
        num_samples: int = 64,
        random_fraction: float = 1.0 / 3.0,
        bandwidth_factor: float = 3.0,
        min_bandwidth: float = 1e-3,
        min_points_in_model: int = 0,
    ) -> None: ...
    @staticmethod
    def from_katib(settings: _KatibSettings) -> BOHB: ...  # type: ignore[override]

class ASHA(Searcher):
    def __init__(
        self,
        *,
        min_resource: float = 1.0,
        max_resource: float = 81.0,
        eta: int = 3,
        min_early_stopping_rate: int = 0,
        resource_name: Optional[str] = None,
        mode: str = "prune",
        max_configs: int = 0,
    ) -> None: ...

class ASHAPruner(Pruner):
    def __init__(
        self, *, min_resource: float = 1.0, max_resource: float = 0.0, eta: int = 3, min_early_stopping_rate: int = 0
    ) -> None: ...

class HyperbandPruner(Pruner):
    def __init__(
        self, *, min_resource: float = 1.0, max_resource: float = 81.0, eta: int = 3, mode: str = "exact"
    ) -> None: ...
    @property
    def n_brackets(self) -> int: ...
    def bracket_of(self, trial_id: int) -> int: ...

class MedianStop(Pruner):
    def __init__(self, *, min_trials_required: int = 3, start_step: int = 4, rule: str = "median") -> None: ...
    @staticmethod
    def from_katib(settings: Optional[_KatibSettings] = None) -> MedianStop: ...

class PercentilePruner(Pruner):
    def __init__(
        self,
        percentile: float = 25.0,
        *,
        n_startup_trials: int = 5,
        n_warmup_steps: int = 0,
        interval_steps: int = 1,
        n_min_trials: int = 1,
    ) -> None: ...

# kubetune.functions (native submodule `functions`)
class LearningCurves:
    def __init__(
        self, *, dim: int = 4, max_budget: float = 81.0, noise: float = 0.01, crossing: float = 0.3, seed: int = 0
    ) -> None: ...
    @property
    def dim(self) -> int: ...
    @property
    def max_budget(self) -> float: ...
    @property
    def optimum(self) -> float: ...
    @property
    def argmin(self) -> list[float]: ...
    def final_value(self, config: Union[Sequence[float], Mapping[str, float], Any]) -> float: ...
    def value(
        self, config: Union[Sequence[float], Mapping[str, float], Any], budget: Optional[float] = None, *,
        resource_name: str = "epochs"
    ) -> float: ...
    def __call__(
        self, config: Union[Sequence[float], Mapping[str, float], Any], budget: Optional[float] = None, *,
        resource_name: str = "epochs"
    ) -> float: ...
    def mean_value(self, config: Union[Sequence[float], Mapping[str, float], Any], budget: float) -> float: ...
    def curve(
        self, config: Union[Sequence[float], Mapping[str, float], Any], budgets: Optional[Sequence[float]] = None
    ) -> list[float]: ...
    def space(self, resource_name: str = "epochs") -> SearchSpace: ...

def learning_curves(
    *, dim: int = 4, max_budget: float = 81.0, noise: float = 0.01, crossing: float = 0.3, seed: int = 0
) -> LearningCurves: ...
