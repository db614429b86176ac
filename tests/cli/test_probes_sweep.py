"""Probes of the same kinds as the earlier break-it lists, on every command: extreme model values, odd numbers
for numeric options, reruns and output modes.  Each asserts the answer a user must get: a one-line error naming
the option (exit 2), a one-line failure that says what happened (exit 1), never a traceback or a raw errno."""

from __future__ import annotations

import pytest

from attnphase.cli import main


def test_an_overflowing_teacher_norm_is_a_failure_that_says_overflow(capsys):
    code = main(["solve", "--alpha", "2", "--rho0", "1e300", "--quadrature", "gh6", "--error-estimate", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err[-1].startswith("attnphase: failed: while solving the state evolution: floating-point overflow")
    assert "(34," not in err[-1] and "Traceback" not in "\n".join(err)
