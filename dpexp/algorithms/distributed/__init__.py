"""Distributed DP learning (Heikkilä et al., NeurIPS 2017): the DCA secure sum (``dca``), its fixed-point ring
(``fixed_point``), noise calibration (``noise``), execution back-ends (``backends``) and distributed Bayesian linear
regression (``dlr``, Algorithm 2)."""
