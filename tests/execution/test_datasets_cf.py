"""The jobs' datasets follow the CF conventions (CF-1.10), and name every variable as their CSV and JSON do.

Each dataset is written by its job's own writer (the sweep through the command, the others from the
writers' functions on small inputs), read back with plain xarray, and checked: by
:func:`attnphase.execution.dataset.cf_problems` (the attributes CF requires: global attributes, long_name,
units on numbers, no units on text, numeric monotonic coordinate variables, the ancillary links of every
error), by cf-xarray, which must find each error through its value's ``ancillary_variables``, and by the IOOS
compliance checker's CF-1.10 suite (units parsed by UDUNITS-2 through cf-units, standard names against the CF
table, coordinates, attribute types): every one of its checks must score full marks.
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

import cf_xarray  # the test extra: a missing checker must fail the suite, not skip it
import xarray as xr
from compliance_checker.runner import CheckSuite

from attnphase.cli import main  # noqa: E402
from attnphase.execution.dataset import (  # noqa: E402
    CONVENTIONS, cf_problems, job_attrs, open_dataset, write_netcdf,
)


def cf_checker_failures(path) -> list[str]:
    """What the compliance checker's CF-1.10 suite finds wrong with the file at ``path`` (empty: full marks)."""
    suite = CheckSuite()
    suite.load_all_available_checkers()
    ds = suite.load_dataset(str(path))
    try:
        ((groups, errors),) = suite.run_all(ds, ["cf:1.10"], skip_checks=[]).values()
    finally:
        ds.close()
    return [f"{g.name}: {'; '.join(g.msgs)}" for g in groups if g.value[0] < g.value[1]] + [str(e) for e in errors.values()]


def assert_cf(path) -> xr.Dataset:
    """The file at ``path``, as plain xarray reads it, has no CF problem, cf-xarray finds every error, and the
    CF checker gives it full marks."""
    assert cf_checker_failures(path) == []
    with xr.open_dataset(path) as raw:
        ds = raw.load()
    assert cf_problems(ds) == []
    assert ds.attrs["Conventions"] == CONVENTIONS and ds.attrs["title"] and ds.attrs["history"]
    linked = 0
    for name in ds.data_vars:
        listed = ds[name].attrs.get("ancillary_variables", "").split()
        if listed:
            assert sorted(ds.cf.get_associated_variable_names(name)["ancillary_variables"]) == sorted(listed)
            linked += 1
    assert linked, "no variable carries its error"
    return ds


def test_cf_problems_sees_what_cf_requires() -> None:
    """The check is not vacuous: each rule it enforces fails on a dataset that breaks it."""
    from attnphase.execution.dataset import Variable, annotate, cf_attrs, table_lookup

    table = {"x": Variable("x", "an observable"), "omega": Variable("omega", "weight omega"),
             "branch": Variable("branch", "a branch", None), "note": Variable("note", "a note", None)}
    good = annotate(xr.Dataset({"x": (("omega", "branch"), np.ones((2, 2))), "err_x": (("omega", "branch"), np.ones((2, 2))),
                                "note": (("omega",), np.array(["a", ""], dtype=object))},
                               coords={"omega": [0.1, 0.2], "branch": ["s", "p"]}, attrs=cf_attrs("t", "cmd")),
                    table_lookup(table))
    assert cf_problems(good) == []
    assert good["x"].attrs["ancillary_variables"] == "err_x"
    assert good["err_x"].attrs["long_name"] == "standard error of an observable" and good["err_x"].attrs["units"] == "1"
    broken = {
        "no Conventions": good.assign_attrs(Conventions=""),
        "no units": good.assign(x=good["x"].copy().assign_attrs(units="")),
        "no long_name": good.assign(note=good["note"].copy().assign_attrs(long_name="")),
        "text with units": good.assign(note=good["note"].copy().assign_attrs(units="1")),
        "unlinked error": good.assign(x=good["x"].copy().assign_attrs(ancillary_variables="")),
        "error units": good.assign(err_x=good["err_x"].copy().assign_attrs(units="s")),
        "error name": good.assign(err_x=good["err_x"].copy().assign_attrs(long_name="spread")),
        "description": good.assign(x=good["x"].copy().assign_attrs(description="old")),
    }
    for what, ds in broken.items():
        assert cf_problems(ds), what
    dup = good.assign_coords(omega=[0.1, 0.1])
    assert any("monotonic" in p for p in cf_problems(dup))
    filled = good.copy()
    filled["omega"].encoding["_FillValue"] = float("nan")  # as xarray writes a float coordinate by default
    assert any("_FillValue" in p for p in cf_problems(filled)) and cf_problems(good) == []
    # a coded yes/no variable says its codes (converged, on_branch, stable had only a long_name)
    coded = good.assign(converged=(("omega",), np.array([0, 1], dtype=np.int8), {"long_name": "1 converged",
                                                                                  "units": "1"}))
    assert any("converged: a coded variable without flag_values" in p for p in cf_problems(coded))
    flagged = annotate(coded, table_lookup({"converged": Variable("converged", "1 converged",
                                                                  flags=((0, "no"), (1, "yes")))}))
    assert cf_problems(flagged) == [] and flagged["converged"].attrs["flag_meanings"] == "no yes"
    assert flagged["converged"].attrs["flag_values"].dtype == np.int8


def test_text_dimension_is_an_auxiliary_coordinate_in_the_file_and_an_index_again(tmp_path) -> None:
    from attnphase.execution.dataset import Variable, annotate, table_lookup

    table = {"x": Variable("x", "x"), "omega": Variable("omega", "omega"), "branch": Variable("branch", "branch", None)}
    ds = annotate(xr.Dataset({"x": (("omega", "branch"), np.arange(4.0).reshape(2, 2))},
                             coords={"omega": [0.3, 0.1], "branch": ["semantic", "positional"]},
                             attrs=job_attrs("test", version="v")), table_lookup(table))
    write_netcdf(ds, tmp_path / "t.nc")
    with xr.open_dataset(tmp_path / "t.nc") as raw:
        assert "branch" not in raw.variables and raw["branch_label"].dims == ("branch",)
        assert raw["branch_label"].attrs["long_name"] == "branch" and list(raw.omega.values) == [0.1, 0.3]
    back = open_dataset(tmp_path / "t.nc")
    assert float(back.x.sel(omega=0.3, branch="positional")) == 1.0 and back.branch.attrs["long_name"] == "branch"


def test_sweep_dataset_holds_every_column_of_its_csv(tmp_path, capsys) -> None:
    """`sweep`: sweep_<branch>.nc has each CSV column (V, err_V, iterations, residual, reason, ...) with the
    CSV's values, and is CF-conformant; the --json object describes its columns with the same names."""
    argv = ["sweep", "--omega", "0.3", "--alpha", "1.6,2", "--branch", "semantic", "--quadrature", "sobol8:4",
            "--out", str(tmp_path), "--quiet", "--json"]
    assert main(argv) == 0
    rec = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader(open(tmp_path / "sweep_semantic_omega0.3.csv")))
    ds = assert_cf(tmp_path / "sweep_semantic.nc")
    columns = set(rows[0]) - {"alpha", "omega"}
    assert {"V", "err_V", "iterations", "residual", "reason", "sigma", "lam", "branch"} <= columns <= set(ds.data_vars)
    for i, row in enumerate(rows):
        for c in columns:
            got = ds[c].values[0, i]
            if ds[c].dtype.kind in "OUS":
                assert str(got) == row[c], c
            else:  # a boolean column (converged) is 0 / 1 in the dataset and in the CSV
                assert row[c] not in ("True", "False"), c
                assert float(got) == pytest.approx(float(row[c]), rel=1e-12), c
    assert ds["V"].attrs["ancillary_variables"] == "err_V" and ds["err_V"].attrs["long_name"].startswith("standard error")
    assert set(rec["variables"]) == set(rows[0]) and rec["variables"]["V"]["long_name"] == ds["V"].attrs["long_name"]
    # one name per column: the JSON's rows have the CSV's header, the dataset nothing else but the end and the status
    assert [list(r) for r in rec["rows"]] == [list(rows[0])] * len(rows) == [list(rec["variables"])] * len(rows)
    assert set(ds.data_vars) - columns <= {"end", "err_end", "end_kind", "status", "error"}


def _boundaries(sweep):
    """Boundaries at two omegas around a real (small) semantic sweep, with error bars at one of them."""
    from attnphase.numerics.phase.boundary_results import Boundaries

    return [Boundaries(omega=w, alpha_c=1.25 + w, alpha_l=1.5, semantic_end=0.7, positional_end=math.nan,
                       notes=("a note",), alpha_c_coarse=1.2, semantic_end_kind="bifurcation",
                       semantic_end_method="eigenvalue", semantic=sweep, positional=None)
            for w in (0.3, 0.25)]


@pytest.fixture(scope="module")
def small_sweep():
    from attnphase.numerics import sweep
    from attnphase.numerics.config import SolverConfig
    from attnphase.theory.params import ModelParams

    return sweep(ModelParams(omega=0.3), [1.6, 2.0], "semantic", config=SolverConfig(quadrature="gh6"))


def test_phase_diagram_and_scan_datasets_are_cf(tmp_path, small_sweep) -> None:
    from attnphase.numerics.jobs.dataset import boundaries_dataset
    from attnphase.numerics.jobs.boundary_table import csv_columns
    from attnphase.numerics.jobs.variables import described

    rows = _boundaries(small_sweep)
    err = {c: (0.01 if c.startswith("err_") else 1) for k in ("alpha_c", "alpha_l", "semantic_end", "positional_end")
           for c in (f"err_{k}", f"{k}_found")}
    cells = [{"at": {"omega": b.omega}, "b": b, "err": err if i == 0 else None, "status": "done", "error": ""}
             for i, b in enumerate(rows)]
    attrs = job_attrs("phase-diagram", version="v", model={"L": 2}, solver={}, rule="gh6", command="attnphase x")
    write_netcdf(boundaries_dataset(cells, ("omega",), {"omega": [b.omega for b in rows]}, [1.6, 2.0], attrs),
                 tmp_path / "phase_diagram.nc")
    ds = assert_cf(tmp_path / "phase_diagram.nc")
    columns = csv_columns(1, errors=True)  # the rank-1 table's columns and its error columns
    assert set(columns) - {"omega"} <= set(ds.data_vars)
    assert list(ds.omega.values) == [0.25, 0.3]  # written in increasing order
    assert ds["alpha_c"].attrs["ancillary_variables"] == "alpha_c_found err_alpha_c"
    assert ds["err_alpha_c"].attrs["long_name"] == "standard error of " + ds["alpha_c"].attrs["long_name"]
    assert "branch_label" in ds.coords and ds["branch_label"].attrs["long_name"]
    assert set(described(columns)) == set(columns)
    back = open_dataset(tmp_path / "phase_diagram.nc")
    assert float(back.err_alpha_c.sel(omega=0.3)) == 0.01 and math.isnan(float(back.err_alpha_c.sel(omega=0.25)))
    assert list(back.theta.sel(omega=0.3, branch="semantic").values) == [p.record["theta"] for p in small_sweep.points]

    scan_cells = [dict(c, at={"lam": lam, "omega": c["b"].omega}) for lam in (0.01, 0.02) for c in cells]
    write_netcdf(boundaries_dataset(scan_cells, ("lam", "omega"), {"lam": [0.01, 0.02], "omega": [0.3, 0.25]},
                                    [1.6, 2.0], job_attrs("scan", version="v", scanned="lam")), tmp_path / "scan.nc")
    assert assert_cf(tmp_path / "scan.nc")["lam"].attrs["long_name"] == "ridge penalty lambda"


def test_a_branch_absent_or_failed_on_the_grid_has_no_numbers_and_says_which(small_sweep) -> None:
    """``scan --lam 0,0.01``: where the positional starts fell to the agnostic point (the branch absent, as the notes
    said) the dataset held that point's numbers on the positional branch with converged = 1.  They are NaN there;
    ``converged`` says whether the solve converged, ``on_branch`` whether it reached the branch."""
    from dataclasses import replace

    from attnphase.numerics.jobs.dataset import boundaries_dataset
    from attnphase.numerics.phase.continuation import BranchSweep

    fell, failed = (replace(p, requested="positional") for p in small_sweep.points)
    fell = replace(fell, branch="agnostic")
    failed = replace(failed, status=replace(failed.status, converged=False))
    (b, _) = _boundaries(small_sweep)
    b = replace(b, positional=BranchSweep("positional", [fell, failed]))
    ds = boundaries_dataset([{"at": {"omega": b.omega}, "b": b, "err": None, "status": "done", "error": ""}],
                            ("omega",), {"omega": [b.omega]}, [1.6, 2.0], job_attrs("phase-diagram", version="v"))
    pos, sem = ds.sel(omega=b.omega, branch="positional"), ds.sel(omega=b.omega, branch="semantic")
    assert list(pos.converged.values) == [1, 0] and list(pos.on_branch.values) == [0, 0]
    assert np.isnan(pos.eps_g.values).all() and np.isnan(pos.theta.values).all()
    assert list(sem.converged.values) == list(sem.on_branch.values) == [1, 1] and np.isfinite(sem.eps_g.values).all()
    # a grid point the branch was not followed to: no solve there, -1 (it said 0, a solver failure that never was)
    b = replace(b, positional=BranchSweep("positional", [failed]))
    ds = boundaries_dataset([{"at": {"omega": b.omega}, "b": b, "err": None, "status": "done", "error": ""}],
                            ("omega",), {"omega": [b.omega]}, [1.6, 2.0], job_attrs("phase-diagram", version="v"))
    pos = ds.sel(omega=b.omega, branch="positional")
    assert list(pos.converged.values) == [-1, 0] and list(pos.on_branch.values) == [0, 0]
    assert "-1 where no solve was made" in ds.converged.attrs["long_name"]


def test_rank_phase_diagram_dataset_is_cf(tmp_path) -> None:
    from attnphase.numerics.phase.boundary_results import Boundaries, LocatedEnd
    from attnphase.numerics.jobs.boundary_table import csv_columns
    from attnphase.numerics.jobs.dataset import boundaries_dataset

    nan = math.nan
    rows = [Boundaries(omega=w, alpha_c=1.2, alpha_l=1.5, semantic_end=0.7, positional_end=nan, notes=("n",),
                       alpha_c_err=0.01, alpha_c_from="positional", alpha_c_to="semantic", alpha_c_method="root",
                       alpha_l_err=0.02, alpha_l_branch="semantic", eps_lin=0.002, r=2, r_star=1,
                       semantic_end_err=0.01, semantic_end_kind="agnostic",
                       ends=(LocatedEnd("semantic", 0.7, 0.01, "above", "agnostic"),),
                       curves={"semantic": ((1.0, True, 0.003, 0.002), (2.0, True, 0.002, 0.001))})
            for w in (0.2, 0.3)]
    cells = [{"at": {"omega": b.omega}, "b": b, "err": b.errors(), "status": "done", "error": ""} for b in rows]
    write_netcdf(boundaries_dataset(cells, ("omega",), {"omega": [0.2, 0.3]}, [1.0, 2.0],
                                    job_attrs("phase-diagram", version="v"), r=2), tmp_path / "pd.nc")
    ds = assert_cf(tmp_path / "pd.nc")
    assert set(csv_columns(2, errors=True)) - {"omega"} <= set(ds.data_vars)
    assert ds["err_alpha_c"].attrs["long_name"].startswith("bracket width of")  # not a standard error
    assert ds["semantic_end"].attrs["ancillary_variables"] == "err_semantic_end semantic_end_found"


def test_validation_dataset_is_cf(tmp_path) -> None:
    pytest.importorskip("torch")
    from attnphase.theory.params import ModelParams
    from attnphase.validation.experiments import SimSpec, run_simulation
    from attnphase.validation.jobs import validation_dataset
    from attnphase.validation.reference import BranchCurve, TheoryAtOmega

    runs = [run_simulation(SimSpec(params=ModelParams(), d=12, alpha=a, init=init, seed=s, n_test=50))
            for a in (0.5, 2.0) for init in ("semantic", "positional") for s in (0, 1)]
    rec = {"alpha": 2.0, "branch": "semantic", "q": 0.4, "m": 0.0, "V": 1.0, "theta": 0.5, "eps_g": 2e-3,
           "e_t": 3e-3, "eps_lin": 2e-3, "converged": True}
    theory = TheoryAtOmega(0.3, 2e-3, {"global": 1.25}, {"global": 1.5}, {"global": ()},
                           {("semantic", "global"): BranchCurve("semantic", "global", (rec,), 0.7)}, 1.0, 1.0)
    write_netcdf(validation_dataset(runs, [theory], job_attrs("validate", version="v")), tmp_path / "validation.nc")
    ds = assert_cf(tmp_path / "validation.nc")
    assert ds["eps_g"].attrs["ancillary_variables"] == "err_eps_g"
    assert ds["err_abs_theta"].attrs["long_name"] == "standard error of " + ds["abs_theta"].attrs["long_name"]
    assert ds["run_eps_g"].attrs["ancillary_variables"] == "err_run_eps_g" and "run_eps_g_se" not in ds
    assert {"init_label", "branch_label", "prox_label"} <= set(ds.coords)
    # a cell where no run was made is NaN, not "did not converge" (validate's grid is the union of its runs' axes)
    part = validation_dataset(runs[:-1], [theory], job_attrs("validate", version="v"))
    last = runs[-1]
    cell = part.run_converged.sel(d=last.d, omega=last.omega, alpha=last.alpha, init=last.init, seed=last.seed)
    assert math.isnan(float(cell)) and np.isin(part.run_converged.values, (0.0, 1.0)).sum() == len(runs) - 1


def test_every_column_the_numerics_write_is_in_the_table() -> None:
    """One name, one meaning: each column of the sweep, phase-diagram, scan, census and rank-r tables has a
    long_name (and units unless it is text) in numerics/jobs/variables.py, and each error names its value."""
    from attnphase.numerics.phase.census import CENSUS_COLUMNS
    from attnphase.numerics.commands.census import CSV_COLUMNS as CENSUS_CSV
    from attnphase.numerics.commands.census import MATRIX_HEAD as HEAD
    from attnphase.numerics.commands.census import MATRIX_TAIL as TAIL
    from attnphase.numerics.jobs.boundary_table import csv_columns
    from attnphase.numerics.jobs.variables import SWEEP_COLUMNS, lookup

    for name in SWEEP_COLUMNS + csv_columns(1, errors=True) + CENSUS_COLUMNS + CENSUS_CSV + HEAD + TAIL + (
            "q0_eig_1", "V0_eig_2", "th0_sv_1", "m_norm_2", "lam", "rho0", "L", "sigma"):
        var = lookup(name)
        assert var is not None and var.long_name, name
    assert lookup("err_q").long_name == "standard error of " + lookup("q").long_name
    assert lookup("err_alpha_c").units == lookup("alpha_c").units == "1"
    assert lookup("no_such_column") is None and lookup("err_no_such") is None
    from attnphase.numerics.jobs.boundary_table import csv_columns

    for name in csv_columns(2, errors=True):
        assert lookup(name) is not None and lookup(name).long_name, name


def test_bayes_phase_diagram_dataset_is_cf(tmp_path, capsys) -> None:
    """``phase-diagram --estimator bayes-optimal``: thresholds over omega, eps_g over (omega, alpha), notes as text."""
    out = tmp_path / "bo"
    assert main(["phase-diagram", "--estimator", "bayes-optimal", "--omega", "0.2,0.3", "--alpha", "0.1,0.3",
                 "--out", str(out), "--quiet"]) == 0
    ds = assert_cf(out / "phase_diagram_bayes-optimal.nc")
    assert ds["alpha_it"].attrs["ancillary_variables"] == "err_alpha_it" and "units" not in ds["alpha_it_note"].attrs


def test_an_integer_attribute_beyond_64_bits_is_written_as_its_text(tmp_path) -> None:
    """``histogram --quick --seed 99999999999999999999`` trained every task, then failed writing histogram.nc
    ("illegal data type for attribute b'seed'"): netCDF holds 64-bit integers."""
    big = 99999999999999999999
    attrs = job_attrs("test", version="v", seed=big, small=7)
    assert attrs["seed"] == str(big) and attrs["small"] == 7
    write_netcdf(xr.Dataset({"x": ("i", [1.0])}, coords={"i": [0]}, attrs=attrs), tmp_path / "a.nc")
    assert open_dataset(tmp_path / "a.nc").attrs["seed"] == str(big)
