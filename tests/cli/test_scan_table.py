"""scan's printed table: each boundary cell as phase-diagram's (boundary_table.boundary_cell)."""

from __future__ import annotations

import math

from attnphase.cli import main
from attnphase.numerics.jobs.boundary_table import boundary_cell


def test_boundary_cell_is_the_value_to_4_decimals_without_bars_and_value_with_bar_with_them() -> None:
    row = {"alpha_c": 1.2518312, "err_alpha_c": 0.00123, "alpha_l": None, "err_alpha_l": None,
           "semantic_end": 0.7161, "err_semantic_end": math.nan}
    assert boundary_cell(row, "alpha_c", False) == "1.2518"
    assert boundary_cell(row, "alpha_c", True) == "1.2518 +- 0.0012"
    assert boundary_cell(row, "alpha_l", True) == boundary_cell(row, "alpha_l", False) == "nan"
    assert boundary_cell(row, "semantic_end", True) == "0.7161 +- nan"


def test_scan_prints_its_cells_as_the_phase_diagram_does(tmp_path, capsys, monkeypatch) -> None:
    """Without bars scan printed 6 significant digits (1.25183) where phase-diagram prints 4 decimals."""
    import attnphase.numerics.jobs.scan_report as scan_report

    rows = [{"lam": lam, "omega": 0.3, "alpha_c": 1.2518312 + lam, "alpha_l": 1.4, "semantic_end": 0.7161,
             "positional_end": None, "notes": ""} for lam in (0.01, 0.02)]

    def fake_run_scan(field, values, models, omegas, alphas, **_):
        return {"rows": rows, "values": list(values), "error_bars": "none", "seconds": 0.0,
                "tasks": {"total": 2, "computed": 2, "stored": 0, "failed": 0, "failures": ""}}

    monkeypatch.setattr(scan_report, "run_scan", fake_run_scan)
    assert main(["scan", "--lam", "0.01,0.02", "--omega", "0.3", "--error-estimate", "0", "--quiet",
                 "--workers", "1", "--out", str(tmp_path / "s")]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].split()[2:] == ["1.2618", "1.4000", "0.7161", "nan"]


def test_scan_json_keeps_its_notes_on_stderr(tmp_path, capsys, monkeypatch) -> None:
    """``scan ... --json`` printed the JSON and dropped the notes it prints on stderr without --json (an unlocated
    boundary, a birth): --json's stdout is the JSON alone, its messages still go to stderr."""
    import json

    import attnphase.numerics.jobs.scan_report as scan_report

    rows = [{"lam": lam, "omega": 0.3, "alpha_c": 1.25 if lam < 0.05 else None, "alpha_l": 1.4, "semantic_end": 0.7161,
             "positional_end": None, "notes": ""} for lam in (0.01, 0.1)]

    def fake_run_scan(field, values, models, omegas, alphas, *, out_dir, amend, **_):
        summary = amend({"rows": rows, "values": list(values), "error_bars": "none", "seconds": 0.0,
                         "tasks": {"total": 2, "computed": 2, "stored": 0, "failed": 0, "failures": ""}})
        (out_dir / "scan.json").write_text(json.dumps(summary))  # as write_boundary_files writes it
        return summary

    monkeypatch.setattr(scan_report, "run_scan", fake_run_scan)
    for extra in ([], ["--json"]):
        assert main(["scan", "--lam", "0.01,0.1", "--omega", "0.3", "--error-estimate", "0", "--quiet",
                     "--workers", "1", "--out", str(tmp_path / "s"), *extra]) == 0
        out, err = capsys.readouterr()
        assert "attnphase: note: no boundary located (nan) for alpha_c at lam = 0.1, omega = 0.3" in err, extra
    assert json.loads(out)["rows"][1]["alpha_c"] is None
    # scan.json holds what --json prints: the error note and each value's Bayes-optimal thresholds (its figure's
    # lines), which the file lacked
    saved = json.loads((tmp_path / "s" / "scan.json").read_text())
    assert saved == {k: v for k, v in json.loads(out).items() if k != "out"}
    assert saved["error_note"] == "no error bars: --error-estimate 0 asks for none"
    assert saved["bayes_optimal"]["0.01"]["alpha_it"] == saved["bayes_optimal"]["0.1"]["alpha_it"] == 0.5


def test_a_scan_over_L_records_each_values_model_not_the_first_ones() -> None:
    """``scan --L 2,3`` wrote the L = 2 model's A, P and sigma as the scan's fixed model (scan.json's params and the
    dataset's model attribute) though the L = 3 cells used a 3 x 3 A and P = I."""
    from attnphase.numerics.jobs.scan_report import scan_model
    from attnphase.theory import ModelParams

    fixed, per_value = scan_model("L", [2, 3], [ModelParams(L=2), ModelParams(L=3)])
    assert fixed["L"] == fixed["omega"] == "scanned" and fixed["A"] == fixed["P"] == fixed["sigma"] == "per value"
    assert fixed["lam"] == 0.01 and per_value["3"]["A"] == ModelParams(L=3).to_dict()["A"]
    assert per_value["2"]["P"] == [[1.0, -1.0], [-1.0, 1.0]] and per_value["3"]["omega"] == "scanned"
    fixed, per_value = scan_model("lam", [0.01, 0.1], [ModelParams(lam=0.01), ModelParams(lam=0.1)])
    assert per_value == {} and fixed == ModelParams().to_dict() | {"lam": "scanned", "omega": "scanned"}
