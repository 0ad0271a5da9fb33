"""Hamiltonian systems for FORGE's "beyond groups" experiment (see docs/reproduction.md).

systems.py (H, its gradients, invariants, initial states), integrate.py (symplectic integrators),
data.py (trajectories and one-step pairs), model.py (the step models and their algebra losses),
rollout.py (long rollouts and invariant drift), trial.py (one trial: train, roll out, measure).
Each module is pure (no Ray, no files); importing this package imports nothing heavy.
"""
