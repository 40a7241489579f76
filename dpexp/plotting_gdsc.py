"""GDSC figure kinds (Honkela et al. 2018 Figs 2-6); see functions below."""
