"""scikit-learn style estimators over the registered algorithms (docs/api.md, "Estimators").

Each class wraps one registered algorithm (``algorithm``: its registry name) and runs **its own code**: ``fit``
maps your rows with the declared bounds onto the algorithm's domain (``dpexp.datasets.table.to_domain``, as the
``csv`` dataset does), builds a ``Split`` of them (private rows; optional public rows), and calls the algorithm's
``run_many`` with a ``PrivacyLedger`` — the entry point the runner and the audit call.  Nothing is re-implemented.

The contract is scikit-learn's: hyper-parameters in the constructor (stored as given), data only in ``fit``,
fitted values ending in ``_``, ``get_params``/``set_params``, and **no bounds from the data**: ``bounds_x`` (one
``(lo, hi)`` for every feature, or one pair per feature) and ``bounds_y`` are required, and values outside them are
clipped with a warning that counts them (``OutOfRangeWarning``).

After ``fit``: ``coef_`` and ``intercept_`` in your own units, ``guarantee_`` (the ``Guarantee`` the ledger derived
from the mechanisms the run called: e.g. pure ε-DP under replace-one neighbours of the rows given to ``fit``),
``n_features_in_``, ``n_clipped_`` (values clipped per column: features then y).  ``predict(X) = X coef_ +
intercept_`` is post-processing (no further privacy cost).

How the coefficients are read from a release:
* GDSC-family methods (``RobustPrivateLR``, ``NoiseAwareRobustPrivateLR``, ``AdaSSP``, ``PrivateLR``) fit
  y' = x'ᵀw without intercept on the symmetric domain [-1, 1] (the midpoint of the bounds is the origin); their
  test rows are the identity matrix, so the predictions *are* w.  Back in your units: coef_j = h_y w_j / h_j and
  intercept_ = m_y − Σ_j coef_j m_j (m: midpoints, h: half-widths of the bounds).
* SLR methods (``NoisyStats``, ``DPTheilSen``, ``DPGradientDescent``; one feature) release the predictions at
  x' = 0.25 and 0.75 of the unit domain (the paper's p25/p75, ε split between them as the algorithm does); the
  line through them is the fitted line (slope (p75 − p25)/0.5), mapped back to your units.

Every mapped value lies in [-1, 1], so the algorithms' own public bounds on the mapped data (``DOMAIN_BOUNDS``:
rplr's ``sigma_bound_y`` is 5 by default, for GDSC's response) are set to 1 unless ``params`` give them.

``noise="seeded"`` draws from ``numpy.random.default_rng(random_state)`` (reproducible; for experiments),
``noise="secure"`` from the OS CSPRNG (``dpexp.privacy.noise.SecureNoise``; ``random_state`` then seeds nothing
private).  scikit-learn is optional: with it installed the classes are ``BaseEstimator`` + ``RegressorMixin``
subclasses; without it they provide the same methods themselves.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, ClassVar

import numpy as np

from dpexp.datasets.table import clip_to_bounds, to_domain
from dpexp.errors import UserError

try:  # scikit-learn is optional: the estimators follow its contract either way
    from sklearn.base import BaseEstimator as _Base
    from sklearn.base import RegressorMixin as _Mixin
except ImportError:  # pragma: no cover - exercised where scikit-learn is absent
    class _Base:  # type: ignore[no-redef]
        """get_params/set_params from the constructor's signature (scikit-learn's rule)."""

        @classmethod
        def _get_param_names(cls) -> list[str]:
            return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

        def get_params(self, deep: bool = True) -> dict[str, Any]:
            return {k: getattr(self, k) for k in self._get_param_names()}

        def set_params(self, **params: Any) -> "_Base":
            valid = self._get_param_names()
            for k, v in params.items():
                if k not in valid:
                    raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}; valid: {valid}")
                setattr(self, k, v)
            return self

        def __repr__(self) -> str:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class _Mixin:  # type: ignore[no-redef]
        def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
            """R² of ``predict(X)`` against ``y``."""
            y = np.asarray(y, dtype=float)
            resid = y - self.predict(X)
            w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=float)
            tot = np.sum(w * (y - np.average(y, weights=w)) ** 2)
            return float(1.0 - np.sum(w * resid ** 2) / tot) if tot > 0 else 0.0


try:
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover
    class NotFittedError(ValueError, AttributeError):  # type: ignore[no-redef]
        """``predict`` before ``fit`` (scikit-learn's exception, when it is not installed)."""


class OutOfRangeWarning(UserWarning):
    """Values given to ``fit`` fell outside the declared bounds and were clipped (counts in the message)."""


_NO_Y = object()


def _validated(X: Any, y: Any = _NO_Y, what: str = "X") -> Any:
    """``X`` (and ``y``) checked and converted to float: scikit-learn's ``check_array``/``check_X_y`` when it is
    installed (its messages: sparse, complex, object, empty and 1-sample input), else the checks below."""
    try:
        from sklearn.utils.validation import check_array, check_X_y
    except ImportError:  # pragma: no cover - exercised where scikit-learn is absent
        A = _as_2d(X, what)
        if y is None:
            raise ValueError("this estimator requires y to be passed, but the target y is None")
        if A.shape[0] < 2 and y is not _NO_Y:
            raise ValueError(f"{what} has 1 sample; at least 2 are required")
        return A if y is _NO_Y else (A, _as_1d(y, "y"))
    if y is _NO_Y:
        return check_array(X, dtype=float, input_name=what)
    return check_X_y(X, y, dtype=float, y_numeric=True, ensure_min_samples=2)


def _as_2d(X: Any, what: str) -> np.ndarray:
    try:
        A = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numeric, got {type(X).__name__}") from None
    if A.ndim != 2:
        raise ValueError(f"{what} must be 2-D (n_samples, n_features), got shape {A.shape}; reshape a single feature "
                         "with X.reshape(-1, 1)")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{what} must be finite (no NaN or infinity)")
    return A


def _as_1d(y: Any, what: str) -> np.ndarray:
    a = np.asarray(y, dtype=float)
    if a.ndim == 2 and a.shape[1] == 1:
        warnings.warn(f"{what} was a column vector; ravelled to shape (n_samples,)", UserWarning, stacklevel=3)
        a = a[:, 0]
    if a.ndim != 1:
        raise ValueError(f"{what} must be 1-D (n_samples,), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} must be finite (no NaN or infinity)")
    return a


def _pair(b: Any, what: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in b)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a pair (lo, hi), got {b!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"{what} needs finite lo < hi, got {[lo, hi]}")
    return lo, hi


#: the algorithms' public bounds on the mapped values that the estimators set to the domain's 1 unless ``params``
#: give them: rplr/narplr/adassp's bounds of the DP σ estimates (defaults 1 and 5, for GDSC's unit-norm rows) and
#: plr's whole-range bounds (defaults 1 and 5)
DOMAIN_BOUNDS = ("sigma_bound_x", "sigma_bound_y", "B_x", "B_y")


class _DPRegressor(_Mixin, _Base):
    """Base of the estimators: see the module docstring.  Subclasses set ``algorithm`` (registry name),
    ``domain`` ("symmetric" for the GDSC family, "unit" for SLR) and ``one_feature``."""

    algorithm: ClassVar[str] = ""
    domain: ClassVar[str] = "symmetric"
    one_feature: ClassVar[bool] = False

    def __init__(self, epsilon: float = 1.0, delta: float = 0.0, bounds_x: Any = None, bounds_y: Any = None,
                 params: dict[str, Any] | None = None, random_state: Any = None, noise: str = "seeded") -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.bounds_x = bounds_x
        self.bounds_y = bounds_y
        self.params = params
        self.random_state = random_state
        self.noise = noise

    # ---- scikit-learn metadata
    def __sklearn_tags__(self):  # noqa: ANN204 — sklearn >= 1.6
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None or self.noise == "secure"
        tags.requires_fit = True
        return tags

    # ---- checks
    def _bounds(self, d: int) -> tuple[list[tuple[float, float]], tuple[float, float]]:
        if self.bounds_x is None or self.bounds_y is None:
            raise ValueError(f"{type(self).__name__} needs the declared public bounds bounds_x and bounds_y (never "
                             "taken from the data), e.g. bounds_x=(0, 100), bounds_y=(-5, 5)")
        bx = np.asarray(self.bounds_x, dtype=object)
        if bx.ndim == 1:
            pairs = [_pair(self.bounds_x, "bounds_x")] * d
        else:
            pairs = [_pair(b, f"bounds_x[{j}]") for j, b in enumerate(self.bounds_x)]
            if len(pairs) != d:
                raise ValueError(f"bounds_x has {len(pairs)} pairs for {d} features; give one (lo, hi) per feature "
                                 "or one for all")
        return pairs, _pair(self.bounds_y, "bounds_y")

    def _instance(self) -> Any:
        from dpexp import registry

        p = dict(self.params or {})
        if p.get("sigma") == "data":
            raise ValueError("params sigma='data' takes the clipping scale from the private rows (not DP); an "
                             "estimator never takes bounds from the data")
        cls = registry.get("algorithm", self.algorithm)
        fields = getattr(cls.Params, "model_fields", {})
        for name in DOMAIN_BOUNDS:   # every mapped value lies in [-1, 1]: the algorithm's public bounds say so
            if name in fields and name not in p:
                p[name] = 1.0
        from pydantic import ValidationError

        from dpexp.spec import format_validation_error

        try:
            return cls(**p)
        except ValidationError as exc:   # one line naming the parameter, the constraint and the value
            raise ValueError(f"{type(self).__name__}: {format_validation_error(exc, cls.Params, ('params',))}"
                             ) from None
        except UserError as exc:
            raise ValueError(f"{type(self).__name__}: params: {exc}") from None

    def _ledger(self) -> Any:
        from dpexp.privacy.ledger import PrivacyLedger
        from dpexp.privacy.noise import SecureNoise

        if self.noise == "secure":
            return PrivacyLedger(SecureNoise())
        if self.noise != "seeded":
            raise ValueError(f"noise must be 'seeded' or 'secure', got {self.noise!r}")
        rs = self.random_state
        gen = rs if isinstance(rs, np.random.Generator) else np.random.default_rng(
            rs if not isinstance(rs, np.random.RandomState) else rs.randint(2**31))
        return PrivacyLedger(gen)

    def _mapped(self, X: np.ndarray, y: np.ndarray | None, bx: list, by: tuple) -> tuple[np.ndarray, Any, list]:
        cols, counts = [], []
        for j in range(X.shape[1]):
            v, k = clip_to_bounds(X[:, j], bx[j])
            cols.append(to_domain(v, bx[j], self.domain))
            counts.append(k)
        Xm = np.column_stack(cols) if cols else X
        ym = None
        if y is not None:
            v, k = clip_to_bounds(y, by)
            ym = to_domain(v, by, self.domain)
            counts.append(k)
        return Xm, ym, counts

    # ---- the estimator
    def fit(self, X: Any, y: Any, X_public: Any = None, y_public: Any = None) -> "_DPRegressor":
        """Fit on the private rows ``(X, y)`` (and the optional public rows ``X_public, y_public``, added exactly where
        the algorithm uses public rows) at the constructor's ε, δ; sets ``coef_``, ``intercept_``, ``guarantee_``."""
        from dpexp.types import Split

        X, y = _validated(X, y)
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
        d = X.shape[1]
        if d < 1:
            raise ValueError("X needs at least 1 feature, got 0")
        if self.one_feature and d != 1:
            raise ValueError(f"{type(self).__name__} is simple linear regression: X needs exactly 1 feature, got {d}")
        bx, by = self._bounds(d)
        alg = self._instance()
        Xm, ym, counts = self._mapped(X, y, bx, by)
        if X_public is not None:
            Xp, yp = _validated(X_public, what="X_public"), _as_1d(y_public, "y_public")
            if Xp.shape[1] != d or Xp.shape[0] != yp.shape[0]:
                raise ValueError(f"X_public must have {d} features and as many rows as y_public")
            Xpm, ypm, _ = self._mapped(Xp, yp, bx, by)
        else:
            Xpm, ypm = np.empty((0, d)), np.empty(0)
        outside = [(name, k) for name, k in zip([f"x{j}" for j in range(d)] + ["y"], counts) if k]
        if outside:
            warnings.warn(f"{type(self).__name__}.fit: values outside the declared bounds were clipped to them ("
                          + ", ".join(f"{name}: {k} of {X.shape[0]}" for name, k in outside) + ")",
                          OutOfRangeWarning, stacklevel=2)
        X_test = np.eye(d) if not self.one_feature else np.array([[0.25], [0.75]])
        box = (-1.0, 1.0) if self.domain == "symmetric" else (0.0, 1.0)
        split = Split(Xm, ym, Xpm, ypm, X_test, np.full(X_test.shape[0], np.nan),
                      {"bounds_x": box, "bounds_y": box, "x_bound": 1.0})
        ledger = self._ledger()
        try:
            out = alg.run_many([split], float(self.epsilon), float(self.delta), [ledger], 1)[0]
        except UserError as exc:
            raise ValueError(str(exc)) from None
        if isinstance(out, Exception):
            raise ValueError(f"{self.algorithm}: {out}") from out
        pred = np.asarray(out.predictions, dtype=float)[0]
        self._store(pred, bx, by)
        self.guarantee_ = out.guarantee
        self.n_features_in_ = d
        self.n_clipped_ = np.asarray(counts, dtype=int)
        self.failed_ = not bool(np.all(np.isfinite(pred)))
        return self

    def _store(self, pred: np.ndarray, bx: list, by: tuple) -> None:
        """``coef_`` and ``intercept_`` in the caller's units from the release ``pred`` (module docstring)."""
        lo_y, hi_y = by
        if self.one_feature:   # the line through the releases at x' = 0.25, 0.75 of the unit domain
            slope = (pred[1] - pred[0]) / 0.5
            a = pred[0] - 0.25 * slope
            (lo_x, hi_x), = bx
            coef = np.array([(hi_y - lo_y) * slope / (hi_x - lo_x)])
            self.coef_ = coef
            self.intercept_ = float(lo_y + (hi_y - lo_y) * a - coef[0] * lo_x)
            return
        m = np.array([(lo + hi) / 2 for lo, hi in bx])
        h = np.array([(hi - lo) / 2 for lo, hi in bx])
        coef = 0.5 * (hi_y - lo_y) * pred / h
        self.coef_ = coef
        self.intercept_ = float(0.5 * (lo_y + hi_y) - coef @ m)

    def predict(self, X: Any) -> np.ndarray:
        """``X coef_ + intercept_`` (post-processing of the release: no privacy cost)."""
        if not hasattr(self, "coef_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call 'fit' first.")
        X = _validated(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return X @ self.coef_ + self.intercept_


class RobustPrivateLR(_DPRegressor):
    """rplr (Honkela et al. 2018): clipped, Laplace-perturbed sufficient statistics and Bayesian LR; pure ε-DP,
    replace-one.  ``params`` are rplr's (``dpexp list algorithms rplr``), e.g. ``{"split": "analytic"}``."""

    algorithm = "rplr"


class NoiseAwareRobustPrivateLR(_DPRegressor):
    """narplr: rplr's release with the noise-aware posterior (docs/noise_aware.md); pure ε-DP, replace-one."""

    algorithm = "narplr"


class AdaSSP(_DPRegressor):
    """AdaSSP (Wang 2018) on rplr's clipping interface; pure ε-DP (``params={"noise": "gaussian"}``: (ε, δ))."""

    algorithm = "adassp"


class PrivateLR(_DPRegressor):
    """plr (Honkela et al. 2018, "private LR"): perturbed statistics without projection; pure ε-DP, replace-one.
    The symmetric domain puts every value in [-1, 1]: give ``params={"B_y": 1.0}`` for the tightest bound."""

    algorithm = "plr"


class NoisyStats(_DPRegressor):
    """NoisyStats (Alabi et al. 2020, Alg. 1), one feature; pure ε-DP, replace-one."""

    algorithm = "noisy_stats"
    domain = "unit"
    one_feature = True


class DPTheilSen(_DPRegressor):
    """DP Theil–Sen with the exponential-mechanism median (Alabi et al. 2020, ``dp_exp_theil_sen``), one feature."""

    algorithm = "dp_exp_theil_sen"
    domain = "unit"
    one_feature = True


class DPGradientDescent(_DPRegressor):
    """DP gradient descent (Alabi et al. 2020, ``dpgd_pure``), one feature; pure ε-DP."""

    algorithm = "dpgd_pure"
    domain = "unit"
    one_feature = True


#: every estimator class (for the tests and docs)
ESTIMATORS: tuple[type[_DPRegressor], ...] = (RobustPrivateLR, NoiseAwareRobustPrivateLR, AdaSSP, PrivateLR,
                                              NoisyStats, DPTheilSen, DPGradientDescent)
