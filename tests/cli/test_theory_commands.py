"""`attnphase derive`, the generated docs/derivation.md, import hygiene and the kernel disk cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnphase.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("L", [2, 3])
def test_derive_prints_every_equation(L: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["derive", "--L", str(L)]) == 0
    out = capsys.readouterr().out
    for title in ("Attention and target", "Limit loss", "Proximal objective", "Channel side", "Prior side",
                  "Test error, free entropy", "Linear positional baseline"):
        assert title in out
    assert f"h_{L}" in out or f"h{chr(0x2080 + L)}" in out
    assert main(["derive", "--L", str(L), "--latex"]) == 0
    latex = capsys.readouterr().out
    assert r"\hat{\theta}_{l}" in latex and r"\frac{\partial}{\partial h_{1}}" in latex and r"\Lambda" in latex
    # every observable of docs/model.md section 4: the test error is the loss at the student's field w, all L tokens
    ws = ",".join(f"w_{{{l + 1}}}" for l in range(L))
    assert rf"\epsilon_{{g}} = E{{\left(\operatorname{{loss}}{{\left({ws} \right)}} \right)}}" in latex


def test_derive_bad_input_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["derive", "--L", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnphase: error: --L: L must be")
    assert main(["derive", "--omega", "1.5"]) == 2
    assert "omega" in capsys.readouterr().err
    assert main(["derive", "--A", "0.5,0.4;0.4,0.6"]) == 2
    assert capsys.readouterr().err.startswith("attnphase: error: --A: A must be")


def test_derive_says_the_file_it_wrote(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`derive -o FILE` wrote FILE without a word, where every other command says its files."""
    assert main(["derive", "--markdown", "-o", str(tmp_path / "d.md")]) == 0
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.startswith("wrote ") and cap.err.rstrip().endswith("d.md")
    assert (tmp_path / "d.md").read_text().startswith("#")


def test_docs_derivation_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/derivation.md must equal `attnphase derive --L 2 --markdown`; regenerate with
    `attnphase derive --L 2 --markdown -o docs/derivation.md`."""
    assert main(["derive", "--L", "2", "--markdown"]) == 0
    fresh = capsys.readouterr().out
    committed = (ROOT / "docs" / "derivation.md").read_text(encoding="utf-8")
    assert committed == fresh, "docs/derivation.md is stale: attnphase derive --L 2 --markdown -o docs/derivation.md"


def _run(code: str, cache: Path) -> dict:
    env = dict(os.environ, ATTNPHASE_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_does_not_pull_torch_or_sympy(tmp_path: Path) -> None:
    code = (
        "import sys, json\n"
        "import attnphase.theory, attnphase.theory.kernels, attnphase.theory.commands.derive\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'sympy': 'sympy' in sys.modules}))"
    )
    assert _run(code, tmp_path) == {"torch": False, "sympy": False}


def test_warm_disk_cache_loads_without_sympy(tmp_path: Path) -> None:
    code = (
        "import sys, json, time\n"
        "t = time.perf_counter()\n"
        "from attnphase.theory.kernels import get_kernels\n"
        "k = get_kernels(2)\n"
        "k.prox_value_grad_hess([0.1, 0.2], [0.0, 0.0], [1.0, 1.0], [[0.5, 0.5], [0.5, 0.5]], [0.25, 0.25])\n"
        "print(json.dumps({'s': time.perf_counter() - t, 'sympy': 'sympy' in sys.modules}))"
    )
    cold = _run(code, tmp_path)
    cached = list(tmp_path.glob("kernels_square_*_L2_r1_cse_*.py"))
    assert cold["sympy"] and cached
    stamps = {f: f.stat().st_mtime_ns for f in cached}
    warm = _run(code, tmp_path)
    # warm: read from the cache, not derived again (sympy, the slow part, never imported; the files not rewritten)
    assert not warm["sympy"] and {f: f.stat().st_mtime_ns for f in cached} == stamps
    # a corrupted cache file is detected and regenerated
    for f in tmp_path.glob("kernels_square_*_L2_*.py"):
        f.write_text("garbage\n")
    assert _run(code, tmp_path)["sympy"]
