"""The DCA protocol (Heikkilä et al. 2017, Alg. 1): secure summation, fixed point, noise, back-ends."""
