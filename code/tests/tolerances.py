"""What the parity tests allow (imported by name: ``from tolerances import
TOL, max_err``; a module of its own, not the conftest, because two test
folders have a conftest.py and ``import conftest`` finds whichever was
loaded last)."""
import torch

# Tolerances the issue sets for agreement with PyTorch.
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def max_err(a, b) -> float:
    return float((torch.as_tensor(a).detach() - torch.as_tensor(b).detach()).abs().max())
