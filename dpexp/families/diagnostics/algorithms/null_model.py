"""Diagnostic algorithms for testing and benchmarking the runner (not from any paper)."""

from __future__ import annotations

import time

import numpy as np
from pydantic import Field

from dpexp.components import Params, Reference
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import gaussian
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


@register_algorithm
class NullModel(Reference):
    """Predicts the mean of the training responses (0 when there are none); non-private.

    ``sleep_ms`` makes each call slow (runner resume/benchmark tests), ``fail`` makes every call raise (failure
    handling tests), ``noise`` adds N(0, noise²) from the cell's generator (reproducibility tests).
    """

    name = "null_model"
    family = "diagnostics"
    description = "diagnostic: predicts the training mean (for runner tests and benchmarks)"
    guarantee_text = "not DP (diagnostic baseline)"

    class Params(Params):
        sleep_ms: float = Field(0.0, ge=0, description="busy-wait this many milliseconds per call")
        fail: bool = Field(False, description="raise an error on every call")
        noise: float = Field(0.0, ge=0, description="std of N(0, noise^2) added to predictions")

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        ledger.not_dp("non-private baseline")
        p = self.params
        if p.fail:
            raise RuntimeError("null_model asked to fail (fail: true)")
        if p.sleep_ms:
            end = time.perf_counter() + p.sleep_ms / 1000.0
            while time.perf_counter() < end:  # busy wait: CPU-bound, as a real algorithm
                pass
        y = split.y_train
        mean = float(y.mean()) if y.size else 0.0
        pred = np.full((trials, split.X_test.shape[0]), mean)
        if p.noise:   # diagnostic noise of a non-DP baseline: drawn, nothing recorded (the run is not DP anyway)
            pred = gaussian(pred, p.noise, ledger.noise)
        return Output(predictions=pred, guarantee=ledger.guarantee())
