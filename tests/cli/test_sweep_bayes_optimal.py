"""`attnphase sweep --estimator bayes-optimal`: both Bayes-optimal branches over an alpha grid, with error bars,
into a CSV per omega and one dataset; one-line errors for what the estimator does not solve."""

from __future__ import annotations

import csv
import json

import pytest

from attnphase.cli import main
from attnphase.numerics.se.bayes_curve import BAYES_SWEEP_COLUMNS


def test_sweep_writes_both_branches_with_bars(tmp_path, capsys):
    out = tmp_path / "res"
    code = main(["sweep", "--estimator", "bayes-optimal", "--alpha", "0.1,0.3,0.45,0.7", "--omega", "0.3",
                 "--out", str(out), "--json", "--quiet"])
    assert code == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["alpha_weak_recovery"] == pytest.approx(1 / 6, rel=1e-7) and obj["alpha_it"] == 0.5
    with open(out / "sweep_bayes-optimal_omega0.3.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == BAYES_SWEEP_COLUMNS and len(rows) == 8
    assert {r["branch"] for r in rows} == {"informative", "uninformative"}
    by = {(r["branch"], float(r["alpha"])): r for r in rows}
    for a in (0.1, 0.3, 0.45, 0.7):
        inf, uni = by[("informative", a)], by[("uninformative", a)]
        assert float(inf["q"]) >= float(uni["q"])  # the informative branch is the higher one
        assert float(inf["eps_g"]) <= float(inf["eps_lin"]) * (1 + 1e-9)
    # below alpha_WR nothing is learned; between alpha_WR and 1/L the overlap grows with alpha; above, perfect
    assert float(by[("informative", 0.1)]["q"]) == 0.0
    assert 0 < float(by[("informative", 0.3)]["q"]) < float(by[("informative", 0.45)]["q"]) < 1
    assert 0 < float(by[("informative", 0.3)]["err_q"]) < 1e-5
    assert by[("informative", 0.7)]["perfect_recovery"] == "1" and float(by[("informative", 0.7)]["eps_g"]) == 0.0
    # the record of solve at the same point is the same number (one implementation)
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.3", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["q"] == float(by[("informative", 0.3)]["q"]) and rec["eps_g"] == float(by[("informative", 0.3)]["eps_g"])
    import xarray as xr

    with xr.open_dataset(out / "sweep_bayes-optimal.nc") as ds:
        assert ds["q"].dims == ("branch", "omega", "alpha") and ds["q"].shape == (2, 1, 4)
        i = [str(b) for b in ds["branch_label"].values].index("informative")
        assert float(ds["q"].isel(branch=i).sel(alpha=0.3).item()) == rec["q"]


@pytest.mark.parametrize("argv, message", [
    (["--branch", "semantic"], "--branch semantic"),
    (["--omega", "0.3,1"], "--omega 1"),
    (["--rank", "2"], "--rank"),
])
def test_bad_bayes_sweep_input_is_one_line_exit_2(tmp_path, capsys, argv, message):
    out = tmp_path / "res"
    assert main(["sweep", "--estimator", "bayes-optimal", "--alpha", "0.2:0.4:3", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error:") and message in err[0]
    assert not out.exists()


def test_erm_sweep_refuses_a_bayes_branch(tmp_path, capsys):
    assert main(["sweep", "--alpha", "1,2", "--branch", "informative", "--out", str(tmp_path / "r")]) == 2
    assert "--branch informative needs --estimator bayes-optimal" in capsys.readouterr().err
