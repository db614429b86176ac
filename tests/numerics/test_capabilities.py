"""The capability table: a capability of one form refused at the other in one line with its option and reason,
and the command line's refusals coming from it (exit code 2 before any work)."""

from __future__ import annotations

import pytest

from attnphase.cli import main
from attnphase.numerics.capabilities import CAPABILITIES, SCALAR_RULES, available, check


@pytest.mark.parametrize("name", sorted(CAPABILITIES))
def test_each_capability_exists_at_one_form_and_is_refused_at_the_other(name: str) -> None:
    cap = CAPABILITIES[name]
    own, other = ((1, 1), (2, 1)) if cap.scalar_only else ((2, 1), (1, 1))
    assert available(name, *own) and not available(name, *other)
    check(name, *own, value="local")  # nothing raised
    with pytest.raises(ValueError) as err:
        check(name, *other, value="local")
    line = str(err.value)
    assert "\n" not in line and line.startswith(cap.option.format(value="local"))
    assert line.endswith(f"got --rank {other[0]} --teacher-rank {other[1]}")
    if cap.scalar_only:  # a rank-1 teacher with a rank-2 student, or the converse: still the matrix form
        assert not available(name, 1, 2)


def test_the_scalar_rules_are_solver_config_fields() -> None:
    from dataclasses import fields

    from attnphase.numerics.config import SolverConfig

    assert set(SCALAR_RULES) <= {f.name for f in fields(SolverConfig)}
    assert all(CAPABILITIES[n].scalar_only for n in SCALAR_RULES)


@pytest.mark.parametrize("argv, expected", [
    (["solve", "--alpha", "2", "--rank", "2", "--e-t-quadrature", "sobol8"], "--e-t-quadrature: the rank-r state evolution does not use it"),
    (["solve", "--alpha", "2", "--rank", "2", "--prox", "local"], "--prox local: the rank-r state evolution implements the global"),
    (["sweep", "--alpha", "1,2", "--branch", "mixed", "--out", "unused_dir"], "--branch mixed needs --rank >= 2"),
    (["phase-diagram", "--rank", "2", "--census", "--out", "unused_dir"], "--census: the phase diagram's census at alpha_c is rank"),
    (["phase-diagram", "--rank", "2", "--continuation", "on", "--out", "unused_dir"],
     "--continuation on: continuation in omega carries the r = r* = 1 boundaries' refinements"),
])
def test_the_commands_refuse_from_the_table(argv, expected, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"attnphase: error: {expected}" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "unused_dir").exists()
