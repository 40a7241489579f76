"""Copy into a notebook: DP linear regression on your own arrays with dpexp's estimators (docs/api.md).

Every estimator runs the registered algorithm's own code on your rows, with the public bounds you declare (never
taken from the data), and reports the guarantee its privacy ledger derived.  Executed by tests/api/test_estimators.py.
"""

import numpy as np

from dpexp.estimators import AdaSSP, DPTheilSen, NoisyStats, PrivateLR, RobustPrivateLR

rng = np.random.default_rng(7)

# a table of 2,000 rows: age in [20, 80], bmi in [15, 45] -> systolic blood pressure in [80, 200]
n = 2000
X = np.column_stack([rng.uniform(20, 80, n), rng.uniform(15, 45, n)])
y = 80 + 0.6 * X[:, 0] + 1.0 * X[:, 1] + rng.normal(0, 8, n)
bounds_x = [(20, 80), (15, 45)]   # one (lo, hi) per feature: public knowledge, not computed from X
bounds_y = (80, 200)

for model in (RobustPrivateLR(epsilon=1.0, bounds_x=bounds_x, bounds_y=bounds_y, params={"split": "analytic"},
                              random_state=0),
              AdaSSP(epsilon=1.0, bounds_x=bounds_x, bounds_y=bounds_y, random_state=0),
              PrivateLR(epsilon=1.0, bounds_x=bounds_x, bounds_y=bounds_y, random_state=0)):
    model.fit(X, y)
    print(f"{type(model).__name__:16s} coef_={np.round(model.coef_, 3)} intercept_={model.intercept_:7.2f} "
          f"R^2={model.score(X, y):.3f}  guarantee: {model.guarantee_.kind} eps={model.guarantee_.epsilon:g}")

# one feature: the simple-linear-regression methods of Alabi et al. (2020)
age = X[:, :1]
for model in (NoisyStats(epsilon=1.0, bounds_x=(20, 80), bounds_y=bounds_y, random_state=0),
              DPTheilSen(epsilon=1.0, bounds_x=(20, 80), bounds_y=bounds_y, random_state=0)):
    model.fit(age, y)
    print(f"{type(model).__name__:16s} slope={model.coef_[0]:.3f} intercept={model.intercept_:.2f}  "
          f"prediction at age 50: {model.predict([[50.0]])[0]:.1f}  guarantee: {model.guarantee_.kind}")

# production use: noise from the OS CSPRNG (not reproducible, nothing recorded)
secure = AdaSSP(epsilon=1.0, bounds_x=bounds_x, bounds_y=bounds_y, noise="secure").fit(X, y)
print("secure AdaSSP coef_:", np.round(secure.coef_, 3))
