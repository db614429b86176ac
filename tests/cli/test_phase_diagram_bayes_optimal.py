"""`attnphase phase-diagram --estimator bayes-optimal`: the thresholds at every omega with their error bars, the
Bayes-optimal eps_g over the alpha grid, in CSV, JSON, netCDF and a figure; the ERM-only options refused in one line."""

from __future__ import annotations

import csv
import json

import pytest

from attnphase.cli import main
from attnphase.numerics.jobs.bayes_dataset import BAYES_DIAGRAM_COLUMNS


def test_bayes_phase_diagram_writes_the_thresholds_per_omega(tmp_path, capsys):
    out = tmp_path / "res"
    code = main(["phase-diagram", "--estimator", "bayes-optimal", "--omega", "0.1,0.3", "--alpha", "0.1,0.3,0.7",
                 "--out", str(out), "--json", "--quiet"])
    assert code == 0
    obj = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in out.iterdir() if p.is_file() and not p.name.startswith(".")) == [
        f"phase_diagram_bayes-optimal.{e}" for e in ("csv", "json", "nc", "png")]
    assert [r["omega"] for r in obj["rows"]] == obj["omegas"] == [0.1, 0.3]
    assert obj["alphas"] == [0.1, 0.3, 0.7] and "alpha" not in obj  # the grid named as the ERM diagram names it
    for r in obj["rows"]:  # L = 2: alpha_WR = 1/6 (closed form), alpha_IT = alpha_AMP = 1/2 (docs/bayes-optimal.md)
        assert abs(r["alpha_weak_recovery"] - 1 / 6) <= 4 * r["err_alpha_weak_recovery"] + 1e-12
        assert 0 < r["err_alpha_weak_recovery"] < 1e-6
        assert r["alpha_it"] == 0.5 and r["alpha_amp"] == 0.5 and r["alpha_amp_note"].startswith("continuous")
    assert obj["alpha_weak_recovery"] == obj["rows"][0]["alpha_weak_recovery"]
    with open(out / "phase_diagram_bayes-optimal.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == BAYES_DIAGRAM_COLUMNS and len(rows) == 2
    assert float(rows[1]["alpha_weak_recovery"]) == obj["rows"][1]["alpha_weak_recovery"]
    # the eps_g curve is the sweep's Bayes-optimal number (one implementation), smaller where omega is larger
    c3 = obj["curves"]["0.3"]
    assert [p["alpha"] for p in c3] == [0.1, 0.3, 0.7]
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.3", "--omega", "0.3", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert c3[1]["eps_g"] == rec["eps_g"] and c3[1]["q"] == rec["q"]
    assert c3[2]["perfect_recovery"] == 1 and c3[2]["eps_g"] == 0.0
    assert obj["curves"]["0.1"][1]["eps_g"] > c3[1]["eps_g"] > 0
    assert [float(k) for k in obj["curves"]] == obj["omegas"]  # keyed by the omegas in full (0.0310345 did not match)
    assert "err_alpha_it" in obj["error_note"] and "err_q = 0" in obj["error_note"]  # the bars of 0, said
    import xarray as xr

    with xr.open_dataset(out / "phase_diagram_bayes-optimal.nc") as ds:
        assert ds["alpha_it"].dims == ("omega",) and ds["eps_g"].dims == ("omega", "alpha")
        assert float(ds["eps_g"].sel(omega=0.3, alpha=0.3)) == rec["eps_g"]
        assert "err_alpha_weak_recovery" in ds["alpha_weak_recovery"].attrs["ancillary_variables"]
        assert ds.attrs["error_note"] == obj["error_note"]  # why err_alpha_it = 0, in the dataset too


def test_a_threshold_that_does_not_exist_is_null_with_its_reason(tmp_path, capsys):
    """L = 3: the same three keys; alpha_amp is 1/3 with the note that says why there is no jump."""
    out = tmp_path / "res"
    assert main(["phase-diagram", "--estimator", "bayes-optimal", "--L", "3", "--omega", "0.3,0.4",
                 "--alpha", "0.1,0.2", "--out", str(out), "--json", "--quiet"]) == 0
    obj = json.loads(capsys.readouterr().out)
    r = obj["rows"][0]
    assert abs(r["alpha_weak_recovery"] - 1 / 12) <= 4 * r["err_alpha_weak_recovery"] + 1e-12
    assert r["alpha_it"] == pytest.approx(1 / 3, abs=1e-15) and "no algorithmic gap" in r["alpha_amp_note"]


@pytest.mark.parametrize("argv, message", [
    (["--omega", "0.3,1"], "--omega 1"),
    (["--rank", "2"], "--rank"),
    (["--census"], "--census"),
    (["--continuation", "on"], "--continuation"),
    # in the words of sweep's and solve's refusal (it said "leave it at auto" here)
    (["--error-estimate", "0"], "--error-estimate: an option of the ERM solver"),
    (["--alpha", "0"], "--alpha"),  # (one alpha is a grid here: tests/cli/test_probes_sweep.py)
])
def test_bad_bayes_diagram_input_is_one_line_exit_2(tmp_path, capsys, argv, message):
    out = tmp_path / "res"
    defaults = {"--omega": "0.3", "--alpha": "0.2,0.4"}  # each option once (a value option given twice is refused)
    base = ["phase-diagram", "--estimator", "bayes-optimal", "--out", str(out)]
    base += [x for o, v in defaults.items() if o not in argv for x in (o, v)]
    assert main(base + argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error:") and message in err[0]
    assert not out.exists()


def test_a_failed_omega_is_recorded_and_the_others_written(tmp_path, capsys, monkeypatch):
    """One failed omega ended the Bayes-optimal diagram with no files (RuntimeError) where the ERM diagram writes the
    rest and records the failure: its row has no threshold, its notes and the dataset's ``status`` / ``error`` say
    why, exit code 1; a rerun computes that omega alone."""
    import xarray as xr

    from attnphase.numerics.se import bayes_curve

    real = bayes_curve.estimator_point

    def flaky(model, omega, *args, **kwargs):
        if abs(omega - 0.3) < 1e-12:
            raise ArithmeticError("no omega 0.3 today")
        return real(model, omega, *args, **kwargs)

    monkeypatch.setattr(bayes_curve, "estimator_point", flaky)
    out = tmp_path / "bo"
    argv = ["phase-diagram", "--estimator", "bayes-optimal", "--omega", "0.1,0.3", "--alpha", "0.2:2.5:4", "--workers",
            "1", "--out", str(out), "--json", "--quiet"]
    assert main(argv) == 1
    got = capsys.readouterr()
    obj = json.loads(got.out)
    bad = next(r for r in obj["rows"] if r["omega"] == 0.3)
    assert bad["alpha_it"] is None and "ArithmeticError: no omega 0.3 today" in bad["alpha_it_note"]
    assert next(r for r in obj["rows"] if r["omega"] == 0.1)["alpha_it"] == pytest.approx(0.5)
    assert all(p["perfect_recovery"] is None for p in obj["curves"]["0.3"])
    assert "1 of 2 tasks failed" in got.err
    with xr.open_dataset(out / "phase_diagram_bayes-optimal.nc") as ds:
        assert list(ds["status"].values) == ["done", "failed"] and "no omega 0.3 today" in str(ds["error"].values[1])
    assert obj["tasks"]["failed"] == 1 and "no omega 0.3 today" in obj["tasks"]["failures"]
    monkeypatch.undo()
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)["tasks"]
    assert (again["computed"], again["stored"], again["failed"]) == (1, 1, 0)
