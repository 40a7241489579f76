"""The privacy map: what each mechanism records, how the ledger composes a run's spends into its guarantee (known
values for every rule), trials counted once, bad input rejected, analytic Gaussian σ on the safe side of its root."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.privacy import accounting as acc
from dpexp.privacy import mechanisms as mech
from dpexp.privacy.guarantee import GUARANTEE_COLUMNS, NON_PRIVATE, Guarantee, PrivacyAccountingError, Spend
from dpexp.privacy.ledger import PrivacyLedger

nan = float("nan")


def ledger(seed: int = 0) -> PrivacyLedger:
    return PrivacyLedger(np.random.default_rng(seed))


def pure(e, **kw):
    return Spend("laplace", "pure", epsilon=e, delta=0.0, **kw)


def approx(e, d, rho=nan, **kw):
    return Spend("gaussian", "approx", epsilon=e, delta=d, rho=rho, **kw)


def zcdp(r, **kw):
    return Spend("gaussian", "zcdp", rho=r, **kw)


# ------------------------------------------------------------------------------------------ composition rules
def test_pure_compose_by_sum():
    g = acc.compose([pure(0.35), pure(0.6), pure(0.05)])
    assert (g.kind, g.epsilon, g.delta, math.isnan(g.rho)) == ("pure", 1.0, 0.0, True)


def test_pure_and_approx_compose_basically():
    g = acc.compose([pure(0.5), approx(0.3, 1e-6), approx(0.2, 2e-6)])
    assert (g.kind, g.epsilon, g.delta) == ("approx", 1.0, 3e-6)
    assert math.isnan(g.rho)


def test_zcdp_adds_and_pure_counts_as_half_eps_squared():
    g = acc.compose([zcdp(0.1), pure(1.0), zcdp(0.15)])
    assert (g.kind, g.rho) == ("zcdp", 0.75)              # 0.1 + 1²/2 + 0.15 (Prop. 1.4, Lemma 2.3)
    assert math.isnan(g.epsilon) and math.isnan(g.delta)


def test_gaussian_approx_spend_enters_zcdp_by_its_rho():
    g = acc.compose([zcdp(0.2), approx(1.0, 1e-5, rho=0.3)])
    assert (g.kind, g.rho) == ("zcdp", 0.5)


def test_zcdp_with_approx_without_rho_needs_a_conversion_delta():
    spends = [zcdp(0.5), approx(0.2, 1e-6)]
    with pytest.raises(PrivacyAccountingError):
        acc.compose(spends)
    g = acc.compose(spends, approx_delta=1e-5)
    assert g.kind == "approx" and g.rho == 0.5
    assert g.epsilon == pytest.approx(acc.zcdp_to_approx_dp_best(0.5, 1e-5) + 0.2, rel=1e-11)
    assert g.delta == pytest.approx(1e-5 + 1e-6, rel=1e-11)


def test_zcdp_converted_to_approx_on_request():
    g = acc.compose([zcdp(0.125)] * 4, approx_delta=2.0**-30)
    assert g.kind == "approx" and g.rho == 0.5 and g.delta == 2.0**-30
    assert g.epsilon == pytest.approx(acc.zcdp_to_approx_dp_best(0.5, 2.0**-30), rel=1e-11)


@pytest.mark.parametrize("rho,lemma_helps", [(0.1, True), (0.5, False)])
def test_best_conversion_known_values(rho, lemma_helps):
    delta = 2.0**-30
    prop13 = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    lemma36 = rho + math.sqrt(4 * rho * math.log(math.sqrt(math.pi * rho) / delta))
    # the Rényi conversion (Canonne, Kamath & Steinke 2020, Prop. 12) is below both Bun & Steinke bounds
    cks = acc.zcdp_to_approx_dp_cks(rho, delta)
    assert acc.zcdp_to_approx_dp_best(rho, delta) == cks < min(prop13, lemma36)
    a = 1 + np.geomspace(1e-3, 1e3, 200_001)             # its minimum over α, on a fine grid (any α is valid)
    grid = np.min(a * rho + math.log(1 / delta) / (a - 1) + np.log1p(-1 / a) - np.log(a) / (a - 1))
    assert cks == pytest.approx(grid, rel=1e-9) and cks <= grid
    assert (lemma36 < prop13) == lemma_helps              # the lemma helps iff pi * rho < 1
    for eps in (0.1, 1.0, 10.0):
        r = acc.approx_dp_to_zcdp_best(eps, delta)
        assert acc.zcdp_to_approx_dp_best(r, delta) == pytest.approx(eps, rel=1e-9)
        assert acc.zcdp_to_approx_dp_best(r, delta) <= eps


def test_not_dp_overrides_everything_and_keeps_its_reason():
    g = acc.compose([pure(1.0), Spend("not DP", "none", note="clipping sigma from private rows")])
    assert g.kind == "none" and g.reason == "clipping sigma from private rows"
    assert all(math.isnan(v) for v in (g.epsilon, g.delta, g.rho))
    assert g.row()[-1] == "not DP: clipping sigma from private rows"


def test_empty_ledger_is_not_a_free_pass():
    assert acc.compose([]).kind == "none"
    L = ledger()
    L.public_only()
    g = L.guarantee()
    assert (g.kind, g.epsilon) == ("pure", 0.0)


def test_totals_are_tidy():
    eps, T = 0.7, 80
    g = acc.compose([pure(eps / T)] * T)
    assert g.epsilon == eps
    g = acc.compose([zcdp(0.5 * eps * eps / T)] * T)
    assert g.rho == 0.245                                  # not 0.24499999999999997
    assert acc.compose([approx(1.0, 2.0**-30)]).delta == 2.0**-30   # exact values are kept


def test_notes_are_kept_once():
    g = acc.compose([approx(1.0, 1e-5, note="classic"), approx(1.0, 1e-5, note="classic"), pure(1.0)])
    assert g.notes == ("classic",) and g.row()[-1] == "classic"


def test_worst_over_trials():
    gs = [Guarantee.pure(1.0), Guarantee("approx", 0.5, 1e-6), Guarantee.pure(2.0)]
    g = acc.worst(gs)
    assert (g.kind, g.epsilon, g.delta) == ("approx", 2.0, 1e-6)
    assert acc.worst([Guarantee.pure(2.0), Guarantee("zcdp", rho=1.0)]).rho == 2.0
    assert acc.worst([Guarantee.pure(1.0), NON_PRIVATE]).kind == "none"
    with pytest.raises(PrivacyAccountingError):
        acc.worst([Guarantee("approx", 1.0, 1e-5), Guarantee("zcdp", rho=0.1)])


# ------------------------------------------------------------------------------------------ trials
def test_a_release_of_many_trials_is_paid_once():
    L = ledger()
    mech.laplace(np.zeros(3), 1.0, 0.4, L, size=10_000)
    mech.laplace(0.0, 1.0, 0.6, L, size=(50, 2))
    assert L.guarantee().epsilon == 1.0


def test_per_trial_loop_is_paid_once_per_trial():
    L = ledger()
    mech.laplace(np.zeros(2), 1.0, 0.3, L, size=5, label="std round")       # common to all trials
    for t in range(5):
        with L.for_trial(t):
            mech.gaussian_approx(np.zeros(2), 1.0, 0.7, 1e-6 * (t + 1), L, label="stats round")
    g = L.guarantee()
    assert g.kind == "approx" and g.epsilon == 1.0
    assert g.delta <= 5e-6 and g.delta > 4e-6                               # the worst trial's δ, not the sum
    assert {s.trial for s in L.spends} == {None, 0, 1, 2, 3, 4}
    with pytest.raises(RuntimeError):
        with L.for_trial(0):
            with L.for_trial(1):
                pass


def test_per_trial_sensitivity_records_the_worst_trial():
    L = ledger()
    sens = np.array([1.0, 3.0, 2.0])
    out = mech.laplace(np.zeros(4), sens, 0.5, L, size=3)
    assert out.shape == (3, 4)
    s = L.spends[0]
    assert (s.epsilon, s.sensitivity, s.scale) == (0.5, 3.0, 2.0)
    with pytest.raises(PrivacyAccountingError):                            # per-entry scales of one release
        mech.laplace(np.zeros(3), np.array([1.0, 2.0, 3.0]), 0.5, L)


# ------------------------------------------------------------------------------------------ what mechanisms record
def test_laplace_records_its_parameters():
    L = ledger()
    mech.laplace(np.zeros(3), 6.0, 1.5, L, label="X'X")
    s = L.spends[0]
    assert (s.mechanism, s.notion, s.epsilon, s.delta, s.sensitivity, s.scale, s.label, s.trial) == (
        "laplace", "pure", 1.5, 0.0, 6.0, 4.0, "X'X", None)


def test_laplace_scale_override_is_checked_against_the_declared_epsilon():
    L = ledger()
    mech.laplace(0.0, 1.0, 0.5, L, scale=2.0)                               # consistent
    mech.laplace(0.0, 1.0, 0.5, L, scale=4.0)                               # more noise than needed: fine
    with pytest.raises(PrivacyAccountingError):
        mech.laplace(0.0, 1.0, 0.5, L, scale=1.0)                           # half the noise: a bug
    mech.laplace(0.0, 1.0, None, L, scale=0.5)                              # implied epsilon recorded
    assert [s.epsilon for s in L.spends] == [0.5, 0.5, 2.0]


def test_gaussian_approx_records_exact_delta_within_the_request():
    L = ledger()
    mech.gaussian_approx(np.zeros(2), 1.0, 1.0, 1e-5, L)
    s = L.spends[0]
    assert s.notion == "approx" and s.epsilon == 1.0 and s.delta <= 1e-5 and s.delta == pytest.approx(1e-5, rel=1e-6)
    assert s.rho == pytest.approx(0.5 / mech.analytic_gaussian_sigma(1, 1, 1e-5) ** 2)
    assert s.note == ""


def test_classic_gaussian_below_one_is_valid_and_records_its_smaller_true_delta():
    L = ledger()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                       # no warning for eps < 1
        mech.gaussian_approx(0.0, 1.0, 0.5, 1e-5, L, calibration="classic")
    s = L.spends[0]
    sigma = mech.gaussian_sigma_classic(1.0, 0.5, 1e-5)
    assert s.scale == sigma and s.delta == pytest.approx(mech.gaussian_delta(sigma, 1.0, 0.5), rel=1e-12)
    assert s.delta < 1e-5 and s.note == ""


def test_classic_gaussian_at_large_epsilon_warns_and_shows_its_true_delta():
    L = ledger()
    with pytest.warns(mech.PrivacyCalibrationWarning):
        mech.gaussian_approx(0.0, 1.0, 10.0, 1e-5, L, calibration="classic")
    g = L.guarantee()
    sigma = mech.gaussian_sigma_classic(1.0, 10.0, 1e-5)
    true_delta = mech.gaussian_delta(sigma, 1.0, 10.0)
    assert true_delta > 1e-5                                                 # the classic formula fails here
    assert g.kind == "approx" and g.delta == pytest.approx(true_delta, rel=1e-9)
    assert "classic Gaussian calibration" in g.note and "true delta" in g.note


def test_gaussian_needs_sensitivity_with_a_ledger_and_records_zcdp_without_epsilon():
    L = ledger()
    with pytest.raises(PrivacyAccountingError):
        mech.gaussian(np.zeros(2), 2.0, L)
    mech.gaussian(np.zeros(2), 2.0, L, sensitivity=1.0)
    assert (L.spends[-1].notion, L.spends[-1].rho) == ("zcdp", 0.125)        # Δ²/(2σ²)
    mech.gaussian(np.zeros(2), 2.0, np.random.default_rng(0))                # old form: no ledger, no record


def test_gaussian_zcdp_records_rho_and_checks_sigma():
    L = ledger()
    mech.gaussian_zcdp(np.zeros(2), 2.0, 0.5, L)
    assert (L.spends[0].rho, L.spends[0].scale) == (0.5, 2.0)
    mech.gaussian_zcdp(np.zeros(2), 2.0, 0.5, L, sigma=2.0 * (1 + 1e-12))
    with pytest.raises(PrivacyAccountingError):
        mech.gaussian_zcdp(np.zeros(2), 2.0, 0.5, L, sigma=1.0)
    assert L.guarantee().rho == 1.0


def test_distributed_gaussian_counts_dropouts_and_colluders_together():
    N, sd = 100, mech.analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    sc = sd / math.sqrt(N - 5 - 1)                                           # Thm 1 noise for T = 5
    ok = mech.distributed_gaussian_spend(1.0, sc, N, 2, 3, 1.0, delta=1e-5)   # 2 dropped + 3 colluding = T
    assert ok.notion == "approx" and ok.delta == pytest.approx(1e-5, rel=1e-6)
    worse = mech.distributed_gaussian_spend(1.0, sc, N, 4, 3, 1.0, delta=1e-5)  # 7 > T
    assert worse.delta > 1e-5 and "exceeds the requested" in worse.note
    assert mech.distributed_gaussian_spend(1.0, sc, 5, 2, 2, 1.0).notion == "none"


def test_gamma_norm_records_epsilon_and_checks_scale():
    L = ledger()
    mech.gamma_norm(np.zeros(4), 2.0, 0.5, L, size=3)
    assert (L.spends[0].epsilon, L.spends[0].scale) == (0.5, 4.0)
    with pytest.raises(PrivacyAccountingError):
        mech.gamma_norm(np.zeros(4), 2.0, 0.5, L, scale=2.0)


def test_exponential_records_two_c_delta_u():
    assert mech.exponential_spend(0.25, 1.0).epsilon == 0.5                  # exp(ε u/2), Δu = 1
    assert mech.exponential_spend(0.25, 2.0, monotone=True).epsilon == 0.5
    L = ledger()
    mech.exponential(np.array([0.0, 1.0, 2.0]), 1.0, 0.8, L, size=10)
    assert L.guarantee().epsilon == 0.8


def test_student_t_records_bun_steinke_epsilon():
    eps, d = 0.5, 3.0
    t, s = eps / (2 * (d + 1)), eps * math.sqrt(d) / (d + 1)                 # Alabi et al. Algorithm 5
    assert mech.student_t_spend(t, s, d).epsilon == pytest.approx(eps, rel=1e-15)
    L = ledger()
    mech.smooth_sensitivity_t(0.3, 0.02, t, s, d, L, size=4)
    assert L.spends[0].epsilon == pytest.approx(eps) and L.spends[0].sensitivity == 0.02


def test_heuristic_noise_makes_the_run_not_dp():
    L = ledger()
    mech.laplace(0.0, 1.0, 1.0, L)
    mech.heuristic_laplace(np.zeros(2), np.array([0.1, 0.2]), L, size=3, reason="MOS from private tracts")
    g = L.guarantee()
    assert g.kind == "none" and g.reason == "MOS from private tracts"


# ------------------------------------------------------------------------------------------ the Guarantee record
def test_guarantee_row_and_text():
    assert GUARANTEE_COLUMNS == ("guarantee", "epsilon_spent", "delta_spent", "rho_spent", "privacy_note")
    g = Guarantee("approx", 1.0, 1e-5)
    assert g.as_row()["guarantee"] == "approx" and g.within(1.0, 1e-5) and not g.within(0.9, 1e-5)
    assert g.describe() == "(ε, δ) = (1, 1e-05)"
    assert Guarantee("zcdp", rho=0.5).describe() == "ρ = 0.5 (zCDP)"
    assert NON_PRIVATE.describe() == "not DP: non-private baseline" and not NON_PRIVATE.is_dp
    d = g.not_dp("centring over all rows").with_note("seeded noise")
    assert d.kind == "none" and d.note == "not DP: centring over all rows; seeded noise"
    assert Guarantee.from_dict(g.to_dict()) == g
    with pytest.raises(PrivacyAccountingError):
        Guarantee("none")
    with pytest.raises(PrivacyAccountingError):
        Spend("x", "pure", epsilon=-1.0)


# ------------------------------------------------------------------------------------------ bad input
BAD_EPS = [0.0, -1.0, float("inf"), float("nan")]


@pytest.mark.parametrize("eps", BAD_EPS)
def test_bad_epsilon_is_a_user_error(eps):
    for call in (lambda: mech.laplace(0.0, 1.0, eps, ledger()),
                 lambda: mech.gaussian_approx(0.0, 1.0, eps, 1e-5, ledger()),
                 lambda: mech.gamma_norm(np.zeros(2), 1.0, eps, ledger()),
                 lambda: mech.exponential(np.zeros(3), 1.0, eps, ledger()),
                 lambda: mech.gaussian_spend(1.0, 1.0, eps),
                 lambda: mech.laplace_scale(1.0, eps)):
        with pytest.raises(UserError):
            call()


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2.0, float("nan")])
def test_bad_delta_is_a_user_error(delta):
    with pytest.raises(UserError):
        mech.gaussian_approx(0.0, 1.0, 1.0, delta, ledger())
    with pytest.raises(UserError):
        mech.analytic_gaussian_sigma(1.0, 1.0, delta)


def test_negative_sensitivity_scale_or_rho_is_a_user_error():
    for call in (lambda: mech.laplace(0.0, -1.0, 1.0, ledger()),
                 lambda: mech.laplace(0.0, 1.0, 1.0, ledger(), scale=-2.0),
                 lambda: mech.gaussian_approx(0.0, -1.0, 1.0, 1e-5, ledger()),
                 lambda: mech.gaussian(0.0, -1.0, ledger(), sensitivity=1.0),
                 lambda: mech.gaussian(0.0, 1.0, ledger(), sensitivity=-1.0),
                 lambda: mech.gaussian_zcdp(0.0, 1.0, 0.0, ledger()),
                 lambda: mech.gaussian_zcdp(0.0, -1.0, 0.5, ledger()),
                 lambda: mech.gamma_norm(np.zeros(2), -1.0, 1.0, ledger()),
                 lambda: mech.exponential(np.zeros(3), 0.0, 1.0, ledger()),
                 lambda: mech.exponential_spend(-0.5, 1.0),
                 lambda: mech.smooth_sensitivity_t(0.0, -1.0, 0.1, 0.5, 3.0, ledger()),
                 lambda: mech.distributed_gaussian_spend(1.0, 1.0, 10, -1, 0, 1.0)):
        with pytest.raises(UserError):
            call()


# ------------------------------------------------------------------------------------------ analytic Gaussian σ
@pytest.mark.parametrize("sens", [1e-3, 0.7, 1.0, 13.0, 1e4])
def test_analytic_sigma_is_the_upper_end_of_its_bracket(sens):
    for eps in (0.01, 0.1, 0.5, 1.0, 3.0, 10.0, 31.6):
        for delta in (1e-12, 1e-8, 1e-5, 1e-3, 0.1):
            s = mech.analytic_gaussian_sigma(sens, eps, delta)
            assert mech._analytic_delta(s, sens, eps) <= delta, (sens, eps, delta)     # never below the root
            assert mech._analytic_delta(s * (1 - 1e-9), sens, eps) > delta, (sens, eps, delta)  # and tight


def test_spend_init_is_the_dataclass_one():
    """``Spend``'s hand-written ``__init__`` (one dict update, for speed) takes the fields in order with their
    defaults, checks what the generated one checked, and gives frozen, equal, hashable, replaceable records."""
    import dataclasses
    import inspect
    import math

    from dpexp.privacy.guarantee import NAN, PrivacyAccountingError, Spend

    params = list(inspect.signature(Spend).parameters.values())
    fields = dataclasses.fields(Spend)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields):
        want = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert p.default is want or (isinstance(want, float) and math.isnan(want) and math.isnan(p.default))
    s = Spend("laplace", "pure", 1.0, 0.0, NAN, 2.0, 0.5, "x", "", 3)   # the default NaN object: equal fields
    assert s == Spend("laplace", "pure", epsilon=1.0, delta=0.0, sensitivity=2.0, scale=0.5, label="x", trial=3)
    assert dataclasses.astuple(s)[:4] == ("laplace", "pure", 1.0, 0.0) and s.trial == 3 and s.label == "x"
    assert hash(s) == hash(dataclasses.replace(s)) and dataclasses.replace(s, trial=None).trial is None
    assert s.to_dict()["rho"] is None and vars(s).keys() == {f.name for f in fields} | {"_ck"}
    assert vars(s)["_ck"] == (3, "pure", 1.0, 0.0, s.rho, "") and vars(dataclasses.replace(s, trial=None))["_ck"] == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epsilon = 2.0
    for bad in [dict(notion="nope"), dict(notion="pure", epsilon=-1.0), dict(notion="pure"),
                dict(notion="approx", epsilon=1.0, delta=1.5), dict(notion="zcdp", rho=-0.1), dict(notion="zcdp"),
                dict(notion="none")]:
        with pytest.raises(PrivacyAccountingError):
            Spend("m", **bad)
    with pytest.raises(PrivacyAccountingError):
        dataclasses.replace(s, epsilon=-1.0)
    assert Spend("m", "none", note="why").note == "why" and Spend("m", "zcdp", rho=0.0).rho == 0.0


def test_guarantee_memo_keeps_ledgers_apart_that_differ_in_one_composed_field():
    """The guarantee memo's key holds every field composition reads: ledgers that differ only in a spend's note,
    ρ, trial, δ, or in approx_delta get their own guarantee (composed in one process, after each other)."""
    def ledger(*spends):
        lg = PrivacyLedger(np.random.default_rng(0))
        for sp in spends:
            lg.record(sp)
        return lg

    base = Spend("laplace", "pure", epsilon=1.0, delta=0.0, sensitivity=1.0, scale=1.0)
    none = Spend("heuristic", "none", note="a reason")
    assert ledger(none).guarantee().note != ledger(Spend("heuristic", "none", note="another")).guarantee().note
    two = [Spend("gaussian", "approx", epsilon=1.0, delta=d, sensitivity=1.0, scale=1.0) for d in (1e-6, 1e-5)]
    assert ledger(two[0]).guarantee().delta != ledger(two[1]).guarantee().delta
    z = [Spend("gaussian", "zcdp", rho=r, sensitivity=1.0, scale=1.0) for r in (0.1, 0.2)]
    assert ledger(z[0]).guarantee().rho != ledger(z[1]).guarantee().rho
    assert ledger(z[0]).guarantee(1e-6).epsilon != ledger(z[0]).guarantee(1e-5).epsilon
    t0, t1 = dataclasses.replace(base, trial=0), dataclasses.replace(base, trial=1)
    same_trial, per_trial = ledger(t0, t0).guarantee(), ledger(t0, t1).guarantee()   # composed per trial, worst
    assert same_trial.epsilon == 2.0 and per_trial.epsilon == 1.0


def test_laplace_rows_refuses_values_without_a_trials_axis():
    """(S,) values would broadcast each cell's draw into every cell's row: refused before anything is recorded."""
    lgs = [PrivacyLedger(np.random.default_rng(k)) for k in range(3)]
    with pytest.raises(ValueError, match="expected"):
        mech.laplace_rows(np.zeros(3), np.ones(3), np.ones(3), 1.0, lgs)
    assert all(not lg.spends for lg in lgs)


def test_guarantee_found_in_a_shared_composed_dict_is_the_memos():
    """Ledgers sharing a ``composed`` dict (the runner's, per chunk) return the guarantee the memo gives a ledger
    without one — the same object — keep keys apart that differ in one composed field, and compose an unhashable
    spend directly."""
    shared: dict = {}

    def with_dict(*spends, approx_delta=None):
        lg = PrivacyLedger(np.random.default_rng(0), shared)
        for sp in spends:
            lg.record(sp)
        return lg.guarantee(approx_delta)

    def plain(*spends, approx_delta=None):
        lg = ledger()
        for sp in spends:
            lg.record(sp)
        return lg.guarantee(approx_delta)

    cases = [(), (pure(1.0),), (pure(1.0), pure(0.5)), (pure(1.0, note="n"),), (approx(1.0, 1e-6),),
             (Spend("g", "zcdp", rho=0.1),), (dataclasses.replace(pure(1.0), trial=1),),
             (Spend("h", "none", note="why"),)]
    for spends in cases * 2:   # the second round is served from the dict
        assert with_dict(*spends) is plain(*spends)
    assert with_dict(Spend("g", "zcdp", rho=0.1), approx_delta=1e-6) is plain(Spend("g", "zcdp", rho=0.1),
                                                                              approx_delta=1e-6)
    assert with_dict(Spend("g", "zcdp", rho=0.1), approx_delta=1e-6) != with_dict(Spend("g", "zcdp", rho=0.1))
    assert len(shared) == len(cases) + 1
    odd = pure(np.array(1.0))   # unhashable: composed directly, nothing kept
    assert with_dict(odd) == plain(odd) == Guarantee.pure(1.0) and len(shared) == len(cases) + 1


def _spends_of_every_maker():
    """The spends every mechanism path records (constructor, templates of the batched ``*_rows``, trial tags,
    ``record_each``'s shared one), in ledgers."""
    from dpexp.families.gdsc.batching import record_each

    lgs = [PrivacyLedger(np.random.default_rng(i)) for i in range(3)]
    L = mech.standard_laplace_rows(lgs, 4)
    mech.laplace_rows(np.zeros((3, 2, 2)), L.reshape(3, 2, 2), np.array([[0.5, 2.0], [1.0, 1.0], [0.0, 3.0]]),
                      np.array([0.7, 1.1, 2.5]), lgs, "X'y")
    mech.gamma_norm_rows(np.zeros((3, 2)), np.array([1.0, 2.0, 3.0]), 0.9, lgs)
    mech.heuristic_laplace_rows([np.zeros((3, 2))], [1.5], lgs, reason="heuristic", labels=["h"])
    mech.heuristic_gamma_norm_rows(np.zeros((3, 2)), np.array([1.0, 2.0, 3.0]), lgs, reason="cube")
    record_each(lgs, lambda lg: lg.public_only())
    for t, lg in enumerate(lgs):
        mech.laplace(np.zeros(2), 1.0, 0.5, lg)
        mech.gaussian(np.zeros(2), 1.0, lg, sensitivity=1.0, epsilon=0.5, delta=1e-5)
        mech.gaussian_zcdp(np.zeros(2), 1.0, 0.1, lg)
        with lg.for_trial(t):
            mech.laplace(np.zeros(2), 1.0, 0.25, lg)
        lg.record(Spend("laplace", "pure", epsilon=0.5, delta=0.0, note="a note"))
    return lgs


def test_every_spend_keeps_the_composition_key_of_its_fields():
    """The key ``PrivacyLedger.guarantee`` memoises on is made with each Spend (``_ck``, templates included): it
    must be ``composition_key`` of the fields composition reads, whatever made the Spend."""
    from dpexp.privacy.guarantee import composition_key
    from dpexp.privacy.ledger import _COMPOSED

    lgs = _spends_of_every_maker()
    kinds = set()
    for lg in lgs:
        for sp in lg.spends:
            assert vars(sp)["_ck"] == composition_key(*_COMPOSED(sp)), sp
            kinds.add(type(vars(sp)["_ck"]))
    assert kinds == {float, tuple}
    assert composition_key(None, "pure", 0.5, 0.0, float("nan"), "") == 0.5
    assert composition_key(None, "pure", 0.5, 0.0, 0.0, "n") == (None, "pure", 0.5, 0.0, 0.0, "n")
    assert composition_key(1, "pure", 0.5, 0.0, 0.0, "")[0] == 1
    assert isinstance(composition_key(None, "approx", 0.5, 1e-5, 0.1, ""), tuple)


def test_guarantee_with_the_kept_keys_equals_composition():
    """Ledgers composed through the memo (a shared ``composed`` dict, then the process memo) give exactly
    ``_compose`` of their spends, for every prefix of what every maker records (pure, approx, zCDP, per trial,
    noted, not DP); a Spend without its kept key (made another way) is keyed from its fields."""
    from dpexp.privacy.ledger import _compose

    composed: dict = {}
    for lg in _spends_of_every_maker():
        for k in range(1, len(lg.spends) + 1):
            part = lg.spends[:k]
            for approx in (None, 1e-6):
                for keep in (True, False):
                    again = PrivacyLedger(np.random.default_rng(0), composed)
                    for sp in part:
                        if not keep:
                            sp, bare = object.__new__(Spend), sp
                            sp.__dict__.update({n: v for n, v in vars(bare).items() if n != "_ck"})
                        again.record(sp)
                    try:
                        want = _compose(list(part), approx)
                    except PrivacyAccountingError:
                        with pytest.raises(PrivacyAccountingError):
                            again.guarantee(approx)
                        continue
                    assert again.guarantee(approx) == want and again.guarantee(approx) == want


def test_guarantee_memo_keeps_pure_spends_apart_by_epsilon_note_and_trial():
    """Pure spends keyed by ε alone (no trial, no note) and by their tuple otherwise: ledgers sharing one
    ``composed`` dict that differ only in a pure spend's ε, note or trial get their own guarantee."""
    composed: dict = {}

    def ledger(*spends):
        lg = PrivacyLedger(np.random.default_rng(0), composed)
        for sp in spends:
            lg.record(sp)
        return lg.guarantee()

    a = Spend("laplace", "pure", epsilon=0.5, delta=0.0)
    assert ledger(a, a).epsilon == 1.0
    assert ledger(a, Spend("laplace", "pure", epsilon=0.25, delta=0.0)).epsilon == 0.75
    noted = ledger(a, Spend("laplace", "pure", epsilon=0.5, delta=0.0, note="n"))
    assert noted.epsilon == 1.0 and noted.notes == ("n",)
    assert ledger(a, dataclasses.replace(a, trial=0)).epsilon == 1.0
    assert ledger(dataclasses.replace(a, trial=1), dataclasses.replace(a, trial=0)).epsilon == 0.5
    assert ledger(a, a).notes == () and len(composed) == 5
