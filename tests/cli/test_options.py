"""The shared options of every command (attnphase.options): one model group, one solver group built into
one SolverConfig, one range syntax, one --json/--quiet/--out/--error-estimate rule, a parser that imports
nothing heavy."""

from __future__ import annotations

import argparse
import math
import subprocess
import sys

import numpy as np
import pytest

from attnphase import options as opt
from attnphase import solver_options
from attnphase import execution_options
from attnphase import outputs
from attnphase.cli import build_parser, command_names, main

MODEL_DESTS = ("L", "sigma", "A", "P", "omega", "lam", "rho0")
SOLVER_COMMANDS = ("solve", "sweep", "phase-diagram", "census")
#: Commands that take a model (each has the model group).
MODEL_COMMANDS = ("derive", "solve", "sweep", "phase-diagram", "census", "simulate", "validate", "check")
#: Files that are not part of the project (the model's statement is docs/model.md); help must not cite them.
NOT_IN_PROJECT = tuple(name + ".md" for name in ("MODEL", "STYLE"))


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _actions(name: str) -> dict[str, argparse.Action]:
    return {a.dest: a for a in _subparser(name)._actions}


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1, cap.err
    return lines[0]


# --- the model group -----------------------------------------------------------------------------

def test_every_model_command_has_the_same_model_options() -> None:
    ref = _actions("solve")
    for name in MODEL_COMMANDS:
        acts = _actions(name)
        for dest in MODEL_DESTS:
            a, r = acts[dest], ref[dest]
            assert a.option_strings == r.option_strings == [f"--{dest}"], (name, dest)
            if dest == "omega":
                assert a.help.startswith("weight omega of A in the teacher, in [0, 1]"), name
                continue
            assert (a.default, a.help, a.type, a.metavar) == (r.default, r.help, r.type, r.metavar), (name, dest)
        assert acts["omega"].default == ("0:0.45:10" if name == "phase-diagram" else "0.3"), name


@pytest.mark.parametrize("name", MODEL_COMMANDS)
def test_every_model_commands_help_lists_the_model_options(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for dest in MODEL_DESTS:
        assert f"--{dest} " in text, (name, dest)
    assert "docs/model.md" in text and not any(n in text for n in NOT_IN_PROJECT)


def test_rank_options_are_one_definition_on_every_model_command() -> None:
    ref = _actions("solve")
    for name in MODEL_COMMANDS:
        acts = _actions(name)
        for dest, option in (("rank", "--rank"), ("teacher_rank", "--teacher-rank")):
            a = acts[dest]
            # one definition; a command whose theory is rank 1 says so in its help
            assert a.option_strings == [option] and (a.default, a.type) == (ref[dest].default, int), (name, dest)
            assert a.help.startswith(ref[dest].help) and a.default == 1
            assert (f"({name} takes 1 only" in a.help) == (name in opt.RANK_ONE_COMMANDS), (name, a.help)
    args = build_parser().parse_args(["simulate", "--rank", "3", "--teacher-rank", "2"])
    p = opt.params_from_args(args)
    assert (p.r, p.r_star) == (3, 2)
    for name in MODEL_COMMANDS:
        a = _actions(name)["token_cov"]
        assert a.option_strings == ["--token-cov"] and a.default is None
        assert a.help.startswith(_actions("solve")["token_cov"].help)
        assert (f"({name} takes a diagonal C only" in a.help) == (name in opt.INDEPENDENT_TOKEN_COMMANDS), name
    args = build_parser().parse_args(["simulate", "--token-cov", "0.16,0.03;0.03,0.36"])
    p = opt.params_from_args(args)
    assert p.sigma == pytest.approx((0.4, 0.6)) and p.correlated_tokens
    diag = opt.params_from_args(build_parser().parse_args(["solve", "--alpha", "1", "--token-cov", "0.16,0;0,0.36"]))
    assert not diag.correlated_tokens and diag.sigma == pytest.approx((0.4, 0.6))  # a diagonal C is sigma


#: Bad input of the general model (docs/model.md section 7): one line naming the option, exit 2, before any work.
BAD_MODEL_INPUT = [
    (["simulate", "--L", "3", "--sigma", "0.4,0.6"], "--sigma"),
    (["simulate", "--L", "3", "--A", "0.6,0.4;0.4,0.6"], "--A"),
    (["simulate", "--L", "3", "--P", "1,0;0,1"], "--P"),
    (["simulate", "--A", "0.5,0.6;0.5,0.4"], "--A"),
    (["simulate", "--A", "1.2,-0.2;0.5,0.5"], "--A"),
    (["simulate", "--P", "1,2;2,1"], "--P"),
    (["simulate", "--rank", "0"], "--rank"),
    (["simulate", "--teacher-rank", "0"], "--teacher-rank"),
    (["simulate", "--d", "3", "--rank", "4"], "--rank 4"),
    (["simulate", "--d", "3", "--teacher-rank", "5"], "--teacher-rank 5"),
    (["phase-diagram", "--rank", "0"], "--rank"),
    (["phase-diagram", "--rank", "2", "--teacher-rank", "0"], "--teacher-rank"),
    (["phase-diagram", "--rank", "2", "--quadrature", "gh20"], "--quadrature"),
    (["phase-diagram", "--rank", "2", "--error-estimate", "3"], "--error-estimate"),
    # none at all drops the merge of split points (extra branches, other boundaries), said nowhere: refused too
    (["phase-diagram", "--rank", "2", "--error-estimate", "0"], "--error-estimate 0"),
    (["scan", "--lam", "0.01,0.02", "--rank", "2", "--error-estimate", "0"], "--error-estimate 0"),
    # a rule of one block: no blocks, so no bars and no merge either ("+- nan (?)" everywhere, said nowhere)
    (["phase-diagram", "--rank", "2", "--quadrature", "sobol11"], "--quadrature sobol11"),
    (["scan", "--lam", "0.01,0.02", "--rank", "2", "--quadrature", "sobol11"], "--quadrature sobol11"),
    (["phase-diagram", "--rank", "2", "--branch-end", "trace"], "--branch-end"),
    (["solve", "--alpha", "1", "--rank", "2", "--alpha-c-quadrature", "sobol14"], "--alpha-c-quadrature"),
    (["phase-diagram", "--rank", "2", "--omega", "1.5"], "--omega"),
    (["derive", "--rank", "2"], "--rank 2"),
    (["scan", "--lam", "0.01,0.02", "--rank", "2", "--prox", "local"], "--prox"),
    (["scan", "--lam", "0.01,0.02", "--rank", "0"], "--rank"),
    (["check", "--rank", "2"], "--rank 2"),
    (["validate", "--rank", "2"], "--rank 2"),
    (["validate", "--suite", "general", "--L", "3"], "--L"),
    (["validate", "--suite", "general", "--d", "2"], "--d 2"),
    (["simulate", "--token-cov", "0.25,0.5;0.5,0.25"], "--token-cov"),
    (["simulate", "--token-cov", "0.25,0.1;0.2,0.25"], "--token-cov"),
    (["simulate", "--L", "3", "--token-cov", "0.25,0.1;0.1,0.25"], "--token-cov"),
    (["simulate", "--token-cov", "0.25,0.1;0.1,0.25", "--sigma", "0.3"], "--token-cov"),
    (["solve", "--alpha", "1", "--token-cov", "0.25,0.25;0.25,0.25"], "--token-cov"),  # singular C
    (["phase-diagram", "--token-cov", "0.25,0.1;0.1,0.25", "--rank", "2"], "--token-cov"),
    (["solve", "--alpha", "1", "--token-cov", "0.25,0.1;0.1,0.25", "--rank", "2"], "--token-cov"),
    (["solve", "--alpha", "1", "--token-cov", "0.25,0.1;0.1,0.25", "--backend", "torch"], "--backend torch"),
    (["solve", "--alpha", "1", "--token-cov", "0.25,0.1;0.1,0.25", "--prox", "aligned"], "--prox aligned"),
    (["derive", "--token-cov", "0.25,0.1;0.1,0.25"], "--token-cov"),
    (["scan", "--lam", "0.01,0.02", "--token-cov", "0.25,0.25;0.25,0.25"], "--token-cov"),  # singular C
    (["census", "--alpha", "1", "--token-cov", "0.25,0.25;0.25,0.25"], "--token-cov"),  # singular C
    (["check", "--token-cov", "0.25,0.1;0.1,0.25"], "--token-cov"),
]


@pytest.mark.parametrize(("argv", "needle"), BAD_MODEL_INPUT)
def test_bad_general_model_input_is_one_line_exit_2(argv, needle, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = _err(capsys)
    assert line.startswith("attnphase: error: ") and needle in line, line
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_params_from_args_builds_every_model_option() -> None:
    args = build_parser().parse_args([
        "solve", "--alpha", "1", "--L", "3", "--sigma", "0.5,0.4,0.6", "--omega", "0.2", "--lam", "0.02",
        "--rho0", "2", "--A", "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.6", "--P", "1,0,0;0,1,0;0,0,1",
    ])
    p = opt.params_from_args(args, omega=opt.single_omega(args, "solve"))
    assert (p.L, p.sigma, p.omega, p.lam, p.rho0) == (3, (0.5, 0.4, 0.6), 0.2, 0.02, 2.0)
    assert p.A[0] == (0.6, 0.2, 0.2) and p.P[1] == (0.0, 1.0, 0.0)
    args = build_parser().parse_args(["simulate", "--L", "3", "--sigma", "0.4:0.6:3"])
    assert opt.params_from_args(args).sigma == pytest.approx((0.4, 0.5, 0.6))
    from attnphase.theory.params import ModelParams

    assert opt.params_from_args(build_parser().parse_args(["derive"])) == ModelParams()


def test_phase_diagram_omegas_are_validated_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["phase-diagram", "--omega", "0.1,0.2:0.4:3"])
    params, omegas = opt.omegas_from_args(args)
    assert omegas == pytest.approx([0.1, 0.2, 0.3, 0.4]) and params.omega == 0.1
    assert main(["phase-diagram", "--omega", "0:1.5:4", "--out", "/nonexistent/never"]) == 2
    assert "omega must lie in [0, 1]" in _err(capsys)


# --- the solver group --------------------------------------------------------------------------

def test_solver_choices_and_defaults_are_those_of_numerics_config() -> None:
    from attnphase.numerics import config as c

    assert solver_options.BRANCHES == c.BRANCHES and solver_options.PROX_MODES == c.PROX_MODES
    assert solver_options.BACKENDS == c.BACKENDS and solver_options.BRANCH_END_STRATEGIES == c.BRANCH_END_STRATEGIES
    default = c.SolverConfig()
    assert solver_options.SOLVER_DEFAULTS == {k: getattr(default, k) for k in solver_options.SOLVER_DEFAULTS}
    assert {f for _, f in solver_options.SOLVER_OPTIONS} == set(solver_options.SOLVER_DEFAULTS)


def test_the_L_limits_the_help_states_are_those_the_commands_apply() -> None:
    """``--help`` said only "L >= 2"; each limit appeared at run time alone."""
    import argparse

    from attnphase import options
    from attnphase.numerics.quadrature.rules import MAX_SE_L

    assert options.SE_MAX_L == MAX_SE_L
    p = argparse.ArgumentParser()
    options.add_model_options(p)
    text = next(a.help for a in p._actions if a.dest == "L")
    assert f"the state evolution supports L <= {MAX_SE_L}" in text and "derive L <= 7" in text
    with pytest.raises(ValueError, match=f"supports L <= {MAX_SE_L}"):
        options.check_L(MAX_SE_L + 1, "solve")
    options.check_L(7, "derive")
    with pytest.raises(ValueError, match="derive supports L <= 7"):
        options.check_L(8, "derive")


@pytest.mark.parametrize("command", SOLVER_COMMANDS)
def test_config_from_args_round_trips_every_solver_option(command: str) -> None:
    from attnphase.numerics.config import SolverConfig

    base = [command, "--alpha", "1"]
    assert solver_options.config_from_args(build_parser().parse_args(base)) == SolverConfig()
    given = {
        "--prox": "local", "--backend": "numpy", "--quadrature": "gh8", "--e-t-quadrature": "sobol14:2:3",
        "--alpha-c-quadrature": "ghr10:2", "--alpha-l-quadrature": "sobol11:3", "--bifurcation-quadrature": "sobol13",
        "--end-quadrature": "sobol11:2", "--branch-end": "trace", "--tol": "1e-8",
    }
    used = {option: field for option, field in solver_options.SOLVER_OPTIONS
            if command in solver_options.ROLE_COMMANDS.get(field, (command,))}
    argv = base + [x for option in used for x in (option, given[option])]
    cfg = solver_options.config_from_args(build_parser().parse_args(argv))
    assert cfg == SolverConfig(**{field: float(given[option]) if field == "tol" else given[option]
                                  for option, field in used.items()})
    for option, field in solver_options.SOLVER_OPTIONS:  # every option reaches its own field, or is refused
        if option in used:
            assert getattr(cfg, field) == (float(given[option]) if field == "tol" else given[option])
        else:  # a solve or census uses no boundary's or end's rule: refused, not ignored
            with pytest.raises(ValueError, match=f"{option}: used by"):
                solver_options.config_from_args(build_parser().parse_args(base + [option, given[option]]))
    # the command's help lists the options it uses, and no option it refuses (solve's listed them all)
    helped = build_parser().command_parsers[command].format_help()
    assert all((option + " ") in helped for option in used), command
    assert not any((option + " ") in helped for option, _ in solver_options.SOLVER_OPTIONS if option not in used)
    nones = [o for o in ("--alpha-c-quadrature", "--e-t-quadrature", "--alpha-l-quadrature", "--end-quadrature")
             if o in used]
    off = solver_options.config_from_args(build_parser().parse_args(base + [x for o in nones for x in (o, "none")]))
    assert all(getattr(off, used[o]) is None for o in nones)


@pytest.mark.parametrize("command", SOLVER_COMMANDS)
def test_precision_sets_every_rule_and_an_explicit_rule_wins(command: str) -> None:
    from attnphase.numerics.config import PRECISION_TIERS, SolverConfig

    base = [command, "--alpha", "1"]
    for tier, rules in PRECISION_TIERS.items():
        cfg = solver_options.config_from_args(build_parser().parse_args(base + ["--precision", tier]))
        assert cfg.replace(backend="auto") == SolverConfig(**rules)  # (precise: torch where a GPU is visible)
    cfg = solver_options.config_from_args(build_parser().parse_args(
        base + ["--precision", "precise", "--quadrature", "sobol9:4"]))
    assert cfg.quadrature == "sobol9:4" and cfg.alpha_c_quadrature == PRECISION_TIERS["precise"]["alpha_c_quadrature"]
    # the tiers grow: every role has at least as many points in each tier as in the one before
    from attnphase.numerics.quadrature.rules import rule_nodes

    for role in PRECISION_TIERS["default"]:
        sizes = [rule_nodes(2, PRECISION_TIERS[t][role]) for t in ("fast", "default", "precise")]
        assert sizes == sorted(sizes) and sizes[0] < sizes[-1], role


@pytest.mark.parametrize("command", SOLVER_COMMANDS)
def test_error_estimate_sets_the_blocks_or_switches_error_bars_off(command: str) -> None:
    base = [command, "--alpha", "1"]
    cfg = solver_options.config_from_args(build_parser().parse_args(base + ["--error-estimate", "8"]))
    assert cfg.quadrature == "sobol10:8:0" and cfg.alpha_c_quadrature == "sobol16:8:0" and cfg.error_bars
    off = solver_options.config_from_args(build_parser().parse_args(base + ["--error-estimate", "0"]))
    assert not off.error_bars and off.quadrature == "sobol10:4"
    one = solver_options.config_from_args(build_parser().parse_args(base + ["--error-estimate", "3", "--quadrature", "gh8"]))
    assert one.quadrature == "gh8" and one.alpha_c_quadrature == "sobol16:3:0"


@pytest.mark.parametrize("option, value, needle", [
    ("--quadrature", "simpson", "--quadrature: unknown quadrature"),
    ("--e-t-quadrature", "gh", "--e-t-quadrature: unknown quadrature"),
    ("--tol", "2", "--tol must lie in [1e-14, 1e-06]"),
    ("--tol", "0.01", "--tol must lie in [1e-14, 1e-06]"),
])
def test_a_bad_solver_option_is_one_line_naming_it(option, value, needle, capsys) -> None:
    assert main(["solve", "--alpha", "1", option, value]) == 2
    assert needle in _err(capsys)


def test_a_rule_too_large_for_L_fails_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--alpha", "1", "--L", "4", "--quadrature", "gh40"]) == 2
    assert _err(capsys).startswith("attnphase: error: --quadrature:")


def test_local_prox_needs_rank_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--alpha", "1", "--rank", "2", "--prox", "local"]) == 2
    assert ("--prox local: the rank-r state evolution implements the global and the aligned proximal maps, not the "
            "local one") in _err(capsys)


# --- one range syntax --------------------------------------------------------------------------

def test_parse_values_number_list_and_inclusive_linspace() -> None:
    assert opt.parse_values("2", "--alpha") == [2.0]
    assert opt.parse_values("0.5, 1,2", "--alpha") == [0.5, 1.0, 2.0]
    grid = opt.parse_values("0.1:3:12", "--alpha")
    assert grid == pytest.approx(list(np.linspace(0.1, 3, 12)), rel=1e-15, abs=0) and grid[-1] == 3.0
    # the float nearest each exact grid value: what a user wrote reads back in the outputs
    assert opt.parse_values("0:0.45:10", "--omega") == [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45]
    assert opt.parse_values("0:0.45:46", "--omega")[30] == 0.3 and opt.parse_values("1e-3:2e-3:3", "--x")[1] == 0.0015
    assert opt.parse_values("0.3:0.3:1", "--omega") == [0.3]
    assert opt.parse_values("-1:1:3", "--x") == [-1.0, 0.0, 1.0]
    assert opt.parse_values("0.1,1:2:3", "--alpha") == [0.1, 1.0, 1.5, 2.0]


@pytest.mark.parametrize("text", ["abc", "1:2", "1:2:3:4", "1:2:x", "", "1,,2", "1:2:2.5", "1_0", "0.1:1_0:3"])
def test_bad_range_text_is_one_line_naming_the_option(text: str) -> None:
    with pytest.raises(ValueError, match="^--alpha must be NUMBER, a,b,c or START:STOP:NUM"):
        opt.parse_values(text, "--alpha")


def test_range_values_must_be_finite_and_num_positive() -> None:
    with pytest.raises(ValueError, match="--alpha values must be finite"):
        opt.parse_values("1,nan", "--alpha")
    with pytest.raises(ValueError, match="NUM in START:STOP:NUM must be an integer >= 1"):
        opt.parse_values("1:2:0", "--alpha")
    # 1:3:1 gave [1] (sweep's one row at alpha = 1) where the help promises both ends
    with pytest.raises(ValueError, match="START:STOP:1 is one value, so START and STOP must be equal"):
        opt.parse_values("1:3:1", "--alpha")


@pytest.mark.parametrize("argv", [
    ["sweep", "--alpha", "-1:2:3"],
    ["sweep", "--alpha", "-1,2"],
    ["phase-diagram", "--alpha", "-0.5:2:4"],
    ["solve", "--alpha", "-1e-3"],
    ["simulate", "--alpha", "-.5"],
])
def test_negative_values_need_no_equals_sign(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert _err(capsys).startswith("attnphase: error: --alpha values must be > 0, got '-")


def test_negative_model_values_reach_the_model_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--alpha", "1", "--lam", "-0.1"]) == 2
    assert "lam (ridge penalty lambda) must be >= 0" in _err(capsys)
    assert main(["derive", "--omega", "-0.2"]) == 2
    assert "omega must lie in [0, 1]" in _err(capsys)
    # -inf and -nan are values too (argparse took -inf for an option: "--omega: expected one argument")
    assert main(["solve", "--alpha", "1", "--omega", "-inf"]) == 2
    assert "--omega values must be finite numbers, got '-inf'" in _err(capsys)
    assert main(["solve", "--alpha", "-NaN"]) == 2
    assert "--alpha values must be finite numbers" in _err(capsys)


@pytest.mark.parametrize("argv", [
    ["solve", "--alpha", "1:2:3"], ["solve", "--alpha", "1,2"], ["solve", "--alpha", "1", "--omega", "0.1:0.3:3"],
    ["simulate", "--alpha", "1:2:3"],
    ["derive", "--omega", "0.1,0.2"], ["validate", "--omega", "0:0.4:3"],
])
def test_a_single_value_option_given_a_range_says_so(argv: list[str], capsys) -> None:
    assert main(argv) == 2
    assert "takes one number here" in _err(capsys)


# --- --json, --quiet, --out, --error-estimate ------------------------------------------------------

def test_output_options_are_uniform() -> None:
    for name in ("solve", "sweep", "phase-diagram", "census", "simulate", "validate", "histogram"):
        assert "json" in _actions(name), name
    for name in ("sweep", "phase-diagram", "validate", "histogram"):
        acts = _actions(name)
        assert acts["out"].metavar == "DIR", name
        assert outputs.OUT_RULE in acts["out"].help, name
    quiet_help = _actions("sweep")["quiet"].help
    for name in command_names():
        assert "no_progress" not in _actions(name), name
        assert _actions(name)["quiet"].help == quiet_help, name  # every command, one meaning
    assert command_names() == ["derive", "solve", "sweep", "phase-diagram", "census", "simulate",
                                        "validate", "check", "histogram", "scan", "show"]
    assert "json" in _actions("check") and _actions("check")["out"].metavar == "DIR"


def test_every_command_is_one_module_of_one_shape() -> None:
    """Each command is a module of its layer's ``commands`` package with NAME, a one-line HELP, DESCRIPTION,
    add_arguments and run, and a docstring saying what it prints; no other module builds a subparser."""
    import inspect
    from pathlib import Path

    from attnphase.cli import COMMANDS, command_modules

    layers = ("attnphase.theory.", "attnphase.numerics.", "attnphase.validation.", "attnphase.execution.")
    for name, module in zip(COMMANDS, command_modules()):
        assert name.startswith(layers) and name.rsplit(".", 2)[1] == "commands", name
        assert isinstance(module.NAME, str) and module.NAME.replace("-", "_") == name.rsplit(".", 1)[1], name
        assert isinstance(module.HELP, str) and "\n" not in module.HELP and module.HELP, name
        assert isinstance(module.DESCRIPTION, str) and module.DESCRIPTION, name
        assert list(inspect.signature(module.add_arguments).parameters) == ["p"], name
        assert list(inspect.signature(module.run).parameters) == ["args"], name
        assert module.__doc__ and module.NAME in module.__doc__, name
    root = Path(__file__).resolve().parents[2]
    builders = sorted(str(f.relative_to(root)) for d in ("attnphase", "theory", "numerics", "validation", "execution")
                      for f in (root / d).rglob("*.py") if "add_parser(" in f.read_text())
    assert builders == ["attnphase/cli.py"]


@pytest.mark.parametrize("value", ["1", "-1", "x", "2.5"])
def test_error_estimate_is_refused_identically_on_solve_and_phase_diagram(value: str, capsys) -> None:
    assert main(["solve", "--alpha", "1", "--error-estimate", value]) == 2
    on_solve = _err(capsys)
    assert main(["phase-diagram", "--error-estimate", value, "--out", "/nonexistent/never"]) == 2
    assert _err(capsys) == on_solve
    assert on_solve == ("attnphase: error: --error-estimate K must be auto, 0 (none) or an integer K >= 2 "
                        f"(a spread needs two rules), got {value!r}")


def test_error_estimate_accepts_auto_0_and_2() -> None:
    for k in ("0", "2", "5"):
        assert solver_options.error_estimate_from_args(argparse.Namespace(error_estimate=k)) == int(k)
    assert solver_options.error_estimate_from_args(argparse.Namespace(error_estimate="auto")) is None


def test_out_is_always_a_folder(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "table"
    f.write_text("")
    for argv in (["sweep", "--alpha", "1", "--out", str(f)], ["phase-diagram", "--out", str(f)],
                 ["histogram", "--out", str(f)], ["sweep", "--alpha", "1", "--out", str(tmp_path / "sem.csv")]):
        assert main(argv) == 2
        assert "--out must be a folder" in _err(capsys)
    assert outputs.out_dir_from_args(argparse.Namespace(out=str(tmp_path / "new" / "dir"))) == tmp_path / "new" / "dir"


def test_long_options_are_never_abbreviated(capsys: pytest.CaptureFixture[str]) -> None:
    """`derive --out` is not `derive --output`, `solve --quad` not `--quadrature`."""
    with pytest.raises(SystemExit) as exc:
        main(["derive", "--out", "x"])
    assert exc.value.code == 2 and "unrecognized arguments: --out" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["solve", "--alpha", "1", "--quad", "gh6"])


@pytest.mark.parametrize("argv", [["solve", "--alpha", "1", "--backend", "gpu"], ["sweep"], ["nope"],
                                  ["simulate", "--d", "x"]])
def test_argparse_errors_have_the_same_one_line_form(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnphase: error: ") and err.rstrip().endswith("--help)")


def test_json_value_makes_plain_json() -> None:
    import json

    v = outputs.json_value({"a": float("nan"), "b": (1, np.float64(2.5)), "c": np.arange(2), "d": np.bool_(True)})
    assert json.loads(json.dumps(v, allow_nan=False)) == {"a": None, "b": [1, 2.5], "c": [0, 1], "d": True}


# --- a parser that imports nothing heavy --------------------------------------------------------

def test_building_the_parser_imports_no_heavy_module() -> None:
    """`python -X importtime`: building every command's parser imports neither scipy, sympy, torch nor numba."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import attnphase.cli; attnphase.cli.build_parser()"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "attnphase.cli" in imported and "attnphase.options" in imported
    for heavy in ("scipy", "sympy", "torch", "numba"):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in imported), heavy


@pytest.mark.parametrize("argv", [["--help"], ["solve", "--help"], ["phase-diagram", "--help"], ["--version"]])
def test_help_exits_0_on_stdout(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "attnphase", *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout and proc.stderr == ""
    assert not any(n in proc.stdout for n in NOT_IN_PROJECT)


def test_every_readme_example_parses() -> None:
    """The README's `$ attnphase ...` examples use the current options (parsed, not run)."""
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    examples = [line.split("$ attnphase", 1)[1] for line in readme.splitlines() if "$ attnphase" in line]
    assert len(examples) >= 10
    parser = build_parser()
    for line in examples:
        argv = shlex.split(line, comments=True)
        args = parser.parse_args(argv)
        assert callable(args.func) or ":" in args.func, line


def test_workers_option_is_auto_or_a_positive_integer() -> None:
    import argparse

    p = argparse.ArgumentParser()
    execution_options.add_workers_option(p)
    assert execution_options.workers_from_args(p.parse_args(["--workers", "3"])) == 3
    assert execution_options.workers_from_args(p.parse_args([])) >= 1
    for bad in ("0", "-2", "two", "1.5"):
        with pytest.raises(ValueError, match="--workers"):
            execution_options.workers_from_args(p.parse_args([f"--workers={bad}"]))


@pytest.mark.parametrize("value", ["localhost", "http://host:8786", "tcp://", "tcp://a b:1"])
def test_scheduler_must_be_an_address(value: str, capsys) -> None:
    assert main(["phase-diagram", "--scheduler", value, "--out", "/nonexistent/never"]) == 2
    assert _err(capsys).startswith("attnphase: error: --scheduler must be a Dask scheduler address")


@pytest.mark.parametrize("argv, needle", [
    (["--omega", "0.3"], "exactly one of --lam, --rho0, --L, --sigma (the second parameter beside --omega), got none"),
    (["--lam", "0.01,0.1", "--L", "2,3"], "got 2 (--lam, --L)"),
    (["--L", "2,2.5"], "--L values must be integers"),
    (["--lam", "0.01,0.01"], "--lam values must be distinct"),
    (["--lam", "0.01,-1"], "--lam: lam (ridge penalty lambda) must be >= 0"),
    (["--L", "2,3", "--A", "0.6,0.4;0.4,0.6"], "--A"),
    # an empty --sigma value was dropped silently, where an empty list item of any other option is refused
    (["--sigma", "0.5;;0.6", "--omega", "0.3"], "none empty, got '0.5;;0.6'"),
    (["--sigma", "0.5;0.6;", "--omega", "0.3"], "none empty"),
])
def test_scan_grid_is_checked_before_any_work(argv, needle, tmp_path, capsys) -> None:
    assert main(["scan", *argv, "--out", str(tmp_path / "x")]) == 2
    assert needle in _err(capsys)
    assert not (tmp_path / "x").exists()


def test_scan_from_args_builds_one_model_per_value() -> None:
    from attnphase import options as opt

    args = build_parser().parse_args(["scan", "--sigma", "0.3;0.4,0.6", "--omega", "0.1,0.2"])
    field, values, models, omegas = opt.scan_from_args(args)
    assert field == "sigma" and values == ["0.3", "0.4,0.6"] and omegas == [0.1, 0.2]
    assert [m.sigma for m in models] == [(0.3, 0.3), (0.4, 0.6)] and all(m.omega == 0.1 for m in models)
    args = build_parser().parse_args(["scan", "--L", "2,3"])
    field, values, models, _ = opt.scan_from_args(args)
    assert field == "L" and values == [2, 3] and [m.L for m in models] == [2, 3]


def test_the_precise_tier_runs_on_a_gpu_when_torch_sees_one(monkeypatch) -> None:
    """--precision precise takes the torch backend where a CUDA device is visible (its rules are large), never
    against an explicit --backend or $ATTNPHASE_PROX_BACKEND; the other tiers keep auto."""
    from attnphase.numerics import config

    monkeypatch.delenv(config.BACKEND_ENV, raising=False)
    monkeypatch.setattr(config, "gpu_visible", lambda: True)
    assert config.SolverConfig.for_precision("precise").backend == "torch"
    assert config.SolverConfig.for_precision("default").backend == "auto"
    assert config.SolverConfig.for_precision("precise", backend="numba").backend == "numba"
    monkeypatch.setenv(config.BACKEND_ENV, "numpy")
    assert config.SolverConfig.for_precision("precise").backend == "auto"
    monkeypatch.delenv(config.BACKEND_ENV)
    monkeypatch.setattr(config, "gpu_visible", lambda: False)
    assert config.SolverConfig.for_precision("precise").backend == "auto"


def test_negative_zero_is_zero() -> None:
    """``--omega -0`` was kept as -0.0: "omega  -0" in solve's table, "omega": -0.0 in its JSON and a file named
    sweep_semantic_omega-0.csv."""
    for text in ("-0", "-0.0", "-0,0.3", "-0:0.2:3"):
        first = opt.parse_values(text, "--omega")[0]
        assert first == 0.0 and math.copysign(1.0, first) == 1.0, text
