"""The Recursive Feature Machine family: a kernel machine that learns its features (AGOP).

model.py (the estimator `RFM`: kernels, the AGOP, the fit; the one-hot inputs and the random
circulant baseline; pure, float64), family.py (the `rfm` family: its config section and how its
trials fit, `fit_trial`). Importing this package imports nothing heavy.
"""
