import sys

import pytest
import torch


@pytest.fixture(params=[torch.float32, torch.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


@pytest.fixture
def one_thread():
    """Each test on one thread (a test file opts in with ``pytestmark``): on a
    small shared machine, faster than fighting for two."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def pytest_terminal_summary(terminalreporter):
    """The public-API fuzz test's figures (functions found, inputs tried:
    code/tests/test_fuzz_public_api.py), printed at the end of a run."""
    figures = getattr(sys.modules.get("test_fuzz_public_api"), "FIGURES", None)
    if figures:
        terminalreporter.write_line("public-API fuzz: " + ", ".join(
            f"{k.replace('_', ' ')} {v}" for k, v in figures.items()))
