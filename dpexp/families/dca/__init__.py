"""Distributed DP learning (Heikkilä et al., NeurIPS 2017).

``protocol/``: the DCA secure sum (``dca``), its fixed-point ring (``fixed_point``), noise calibration (``noise``)
and execution back-ends (``backends``).  ``algorithms/``: distributed Bayesian linear regression (``dlr``,
Algorithm 2) and the protocol timing harness (``timing``, Table 1).  ``datasets/``: the UCI sets of Figs. 2–3 and
the synthetic clients of Table 1.
"""
