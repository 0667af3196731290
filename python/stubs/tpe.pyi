# Type stubs for kubetune's TPE searcher (merged into the package .pyi).
from typing import Any, Mapping, Sequence

class TPE(Searcher):
    """Tree-structured Parzen Estimator; defaults as Optuna 4.x TPESampler."""

    def __init__(
        self,
        *,
        n_startup_trials: int = 10,
        n_ei_candidates: int = 24,
        gamma: float = 0.1,
        gamma_rule: str = "linear",
        gamma_max: int = 25,
        prior_weight: float = 1.0,
        consider_magic_clip: bool = True,
        consider_endpoints: bool = False,
        n_flat_weights: int = 25,
        multivariate: bool = False,
        bandwidth: str = "neighbour",
        group: bool = True,
        constant_liar: bool = True,
        random_state: int | None = None,
        n_threads: int = 1,
    ) -> None: ...
    @staticmethod
    def hyperopt(**overrides: Any) -> TPE: ...
    @staticmethod
    def from_katib(
        settings: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None, multivariate: bool = False
    ) -> TPE: ...
    def n_below(self, n: int) -> int: ...
    @property
    def multivariate(self) -> bool: ...
    @property
    def n_startup_trials(self) -> int: ...
    @property
    def n_ei_candidates(self) -> int: ...
