"""Hamiltonian systems for FORGE's "beyond groups" experiment (see docs/reproduction.md).

systems.py (H, its gradients, invariants, initial states), integrate.py (symplectic integrators),
data.py (trajectories and one-step pairs), model.py (the step models and their algebra losses),
rollout.py (long rollouts and invariant drift), train.py (one seed: train, roll out, measure),
family.py (the `hamiltonian` family: its config section and how its trials train).
Each module is pure (no Ray, no files); importing this package imports nothing heavy.
"""
