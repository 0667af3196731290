# Hand-written members of kubetune._kubetune that replace pybind11-stubgen's (see scripts/gen_stubs.py): the
# bindings convert JSON-like values, for which the generated stubs can only say typing.Any, and kubetune.study
# installs optimize/trials_dataframe on Study at import time.
from __future__ import annotations

import os
import typing
from collections.abc import Callable, Iterable, Sequence

from kubetune.study import RunningTrial

_ParamValue = typing.Union[float, int, str]

class _Bracket(typing.TypedDict):
    s: int
    rungs: list[tuple[int, float]]
    configs: int
    total_resource: float

def hyperband_brackets(
    max_resource: float, eta: int = 3, *, mode: str = "exact", min_resource: float = 1.0
) -> list[_Bracket]: ...

class SearchSpace:
    def set_prior(
        self,
        name: str,
        distribution: typing.Literal["uniform", "log_uniform", "normal", "log_normal"],
        mu: float | None = None,
        sigma: float | None = None,
    ) -> SearchSpace: ...
    def sample(self, seed: int = 0) -> dict[str, _ParamValue]: ...
    def from_unit(self, u: Sequence[float]) -> dict[str, _ParamValue]: ...
    def __eq__(self, other: object) -> bool: ...

class Trial:
    @property
    def params(self) -> dict[str, _ParamValue]: ...

class Study:
    @property
    def best_params(self) -> dict[str, _ParamValue] | None: ...
    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None: ...
    @staticmethod
    def load(path: str | os.PathLike[str]) -> Study: ...
    def optimize(
        self,
        func: Callable[[RunningTrial], float | Sequence[float]],
        n_trials: int,
        n_threads: int = 1,
        progress: bool = False,
        timeout: float | None = None,
        catch: Iterable[type[BaseException]] = (),
        callbacks: Iterable[Callable[[Study, Trial], None]] | None = None,
    ) -> Study: ...
    def trials_dataframe(self) -> typing.Any: ...  # a pandas.DataFrame (pandas is optional)

class TrialState:
    def __str__(self) -> str: ...  # pybind11 lists it twice, which mypy rejects as overloads

def _tpe_models(tpe: TPE, study: Study) -> list[dict[str, typing.Any]]: ...
