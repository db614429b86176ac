"""``attnphase simulate`` / ``validate`` command line (attnphase.validation.cli)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attnphase.cli import main
from attnphase.validation.experiments import JSON_KEYS


def test_validation_cli_does_not_import_torch():
    code = (
        "import sys, argparse\n"
        "import attnphase.validation.cli as c\n"
        "p = argparse.ArgumentParser(); c.register(p.add_subparsers())\n"
        "p.parse_args(['simulate', '--d', '10'])\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_simulate_json(capsys):
    import torch

    n = torch.get_num_threads()
    try:
        code = main(["simulate", "--d", "30", "--alpha", "1.5", "--init", "positional", "--seed", "2",
                     "--n-test", "200", "--json", "--device", "cpu", "--threads", "1"])
    finally:
        torch.set_num_threads(n)
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(out) == 1
    rec = json.loads(out[0])
    assert tuple(rec) == JSON_KEYS
    assert rec["d"] == 30 and rec["alpha"] == 1.5 and rec["init"] == "positional" and rec["optimizer"] == "gd"
    assert rec["converged"] is True and rec["seed"] == 2 and rec["m"] > 0.1


@pytest.mark.parametrize(
    "argv, word",
    [
        (["--d", "1"], "d (embedding dimension)"),
        (["--alpha", "-1"], "alpha"),
        (["--alpha", "0"], "alpha"),
        (["--omega", "1.5"], "omega"),
        (["--init", "sideways"], "init"),
        (["--optimizer", "sgd"], "optimizer"),
        (["--dtype", "float16"], "dtype"),
    ],
)
def test_simulate_bad_arguments(argv, word, capsys):
    code = main(["simulate", "--json", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("attnphase: error:") and word in err[0]


def test_validate_bad_arguments(capsys):
    assert main(["validate", "--d", "1"]) == 2
    assert "d (embedding dimension)" in capsys.readouterr().err
    assert main(["validate", "--omega", "-0.1"]) == 2
    assert "omega" in capsys.readouterr().err
