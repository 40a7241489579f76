"""One package per paper family, each with the same inner shape.

``gdsc`` (Honkela et al. 2018 and Nieminen 2017), ``slr`` (Alabi et al. 2020), ``dca`` (Heikkilä et al. 2017) and
``diagnostics`` (runner test and benchmark helpers).  Inside a family: ``algorithms/`` (one concept per file),
``datasets/``, ``metrics.py``, ``plots.py`` and ``audit.py`` (the audit designs its algorithms point to), plus the
family's shared building blocks.  ``dpexp.registry.load_all()`` imports every module below this package, so a new
file is found by being here: there is no list to edit.  Families never import each other.
"""
