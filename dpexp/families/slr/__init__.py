"""Differentially private simple linear regression (Alabi, McMillan, Sarathy, Smith, Vadhan 2020).

``algorithms/``: ``ols``, ``theil_sen``, ``theil_sen_kmatch`` (non-private references); ``noisy_stats`` (Alg. 1),
``noisy_intercept`` (Sec. 2.4); ``dp_exp_theil_sen``, ``dp_wide_theil_sen``, ``dp_ss_theil_sen`` (Alg. 2 with the
medians of Alg. 3, 4, 5 in ``dp_median``); ``dpgd_pure``, ``dpgd_approx``, ``dpgd_zcdp`` (Appendix F); ``oi_mos``
(Appendix A.2, NOT formally DP).  Each returns predictions at ``X_test`` (normally x = 0.25, 0.75) of shape
(trials, n_test).  ``datasets/``: Opportunity Insights, the UCI sets and the synthetic generator.
"""
