"""Shared test fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small torch problems: one intra-op thread is fastest and immune to busy shared cores.

    Restores torch's thread count afterwards. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``.
    """
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _no_first_run_notices(monkeypatch):
    """The one-line notices before a first-run code generation or JIT (theory.codegen.first_run_notice)
    depend on the cache's state, not on the code under test: silenced, except where a test asks."""
    monkeypatch.setenv("ATTNPHASE_QUIET", "1")


@pytest.fixture(autouse=True)
def _ctrl_c_raises():
    """Python raises KeyboardInterrupt on SIGINT only where SIGINT was not ignored when it started (a wrapper such
    as GNU ``time`` or ``nohup ... &`` passes an ignored SIGINT on, and attnphase rightly keeps it ignored): the
    signal tests need Python's default, whatever started pytest."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    if before is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if before is signal.SIG_IGN:
        signal.signal(signal.SIGINT, before)
