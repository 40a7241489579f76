"""Write configs/examples/own_data.csv: a small synthetic table for the own-data examples (docs/own_data.md).

Nothing here is real data: 3 clinics x 1000 patients, features age [20, 80], bmi [15, 45], dose [0, 10] (mg),
response systolic blood pressure sbp [80, 200] (mmHg), a linear model plus noise, and 10 % of the rows marked
``public`` (say, a published pilot study).  A few rows lie outside the bounds the example configs declare (ages over
80, one sbp over 200), so the examples show the clipping and its counts.  Deterministic: rerunning writes the same
bytes.  Run: python scripts/make_own_data.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parents[1] / "configs" / "examples" / "own_data.csv"


def make(seed: int = 20261201, per_site: int = 1000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for k, site in enumerate(["north", "south", "west"]):
        age = rng.uniform(22, 78, per_site)
        bmi = np.clip(rng.normal(27 + k, 4, per_site), 16, 44)
        dose = rng.choice([0.0, 2.5, 5.0, 7.5, 10.0], per_site)
        sbp = 95 + 0.55 * age + 0.9 * bmi - (2.0 + k) * dose + rng.normal(0, 9, per_site)
        parts.append(pd.DataFrame({"site": site, "age": age.round(1), "bmi": bmi.round(1), "dose": dose,
                                   "sbp": sbp.round(0), "public": (rng.random(per_site) < 0.1).astype(int)}))
    df = pd.concat(parts, ignore_index=True)
    df.loc[[7, 1311, 2650], "age"] = [84.0, 91.0, 83.5]     # outside the declared [20, 80]: clipped and counted
    df.loc[[42], "sbp"] = [212.0]                          # outside [80, 200]
    return df


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    make().to_csv(OUT, index=False)
    print(OUT)
