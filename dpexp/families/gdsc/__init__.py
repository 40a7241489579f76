"""Robust private linear regression on drug-sensitivity data (Honkela et al. 2018; Nieminen 2017 thesis).

``algorithms/``: the proposed ``rplr`` and its references (``lr``, ``plr``, ``rlr``, ``lr_public``), the split-search
cell of Fig. 5 and the compared ``oplr`` / ``fmlr``.  ``stats.py``: the clipped sufficient statistics, their
sensitivities and noise (one definition shared by the algorithms and ``tuning.py``).  ``datasets/``: GDSC, the
Eq. (10) generator and the authors' staged synthetic file.
"""
