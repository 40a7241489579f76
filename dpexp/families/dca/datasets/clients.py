"""Synthetic DCA clients for the protocol timings of Heikkilä et al. 2017, Table 1 (dataset ``dca_clients``).

N clients with d-dimensional vectors uniform in [−1, 1]^d.  The split carries no materialised client matrix (N·d
reaches 10^9): ``X_private`` is a zero-stride view of shape (N, d) so the results record n_private = N and d; the
algorithm (``dca_timing``) generates the clients' values block by block from ``meta['client_seed']``.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from dpexp.components import Dataset, Params, Preprocessing
from dpexp.registry import register_dataset
from dpexp.types import Sizes, Split


class _ClientsParams(Params):
    n_clients: int = Field(100, ge=3, le=10_000_000, description="number of clients N")
    d: int = Field(10, ge=1, le=1_000_000, description="vector length d")


@register_dataset
class DCAClients(Dataset):
    """Synthetic DCA clients for Table 1 (see module docstring)."""

    name = "dca_clients"
    description = "N synthetic clients with d-dim vectors in [-1,1]^d for DCA timings (Heikkila et al. 2017 Table 1)"
    Params = _ClientsParams
    release_point = "one DCA round: a row's epsilon/delta covers the round's sum (only timings are reported)"

    def preprocessing(self) -> Preprocessing:
        return Preprocessing("", "nothing is computed across rows: every client's vector is generated on its own")

    def n_rows(self, subset: str) -> int | None:
        return int(self.params.n_clients)

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        N, d = self.params.n_clients, self.params.d
        X = np.broadcast_to(np.zeros(1), (N, d))
        seed = int(rng.integers(0, 2**63))
        empty = np.zeros((0, d))
        return Split(X, np.zeros(N), empty, np.zeros(0), np.zeros((1, d)), np.zeros(1),
                     {"n_clients": N, "dim": d, "client_seed": seed, "bound": 1.0})
