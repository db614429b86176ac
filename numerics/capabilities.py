"""What the state evolution can do at which rank: one table of the capabilities that exist at the scalar form
(r = r* = 1) or the matrix form only, and :func:`check`, the one-line refusal (``ValueError("<option>: <reason>")``,
exit code 2 on the command line) every command and library entry asks before any work.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnphase.numerics.config import QUADRATURE_ROLES

#: Why the matrix form's e_t and boundaries need none of the scalar form's extra rules.
_RANK_ONE_RULE = ("the rank-r state evolution does not use it (its e_t is on the solve's rule, its boundaries come "
                  "from converged solves, docs/method.md section 11, rank r >= 2); it is for rank 1")

#: Why a branch end at r >= 2 or r* >= 2 is bisected in alpha (the refusal of --branch-end there, and the end's note).
MATRIX_END_NOTE = ("at rank r >= 2 or r* >= 2 every branch end is bisected in alpha (the eigenvalue crossing and the "
                   "trace at fixed order parameter are rank r = r* = 1)")


@dataclass(frozen=True)
class Capability:
    """A capability of one form: ``option`` how a user asks for it (``{value}``: the value asked for),
    ``scalar_only`` True where it exists at r = r* = 1 only, False where at r >= 2 only; ``reason`` the rest of
    the refusal's line."""

    option: str
    scalar_only: bool
    reason: str


#: The scalar form's extra rules (SolverConfig fields), refused at r >= 2 or r* >= 2.
SCALAR_RULES = QUADRATURE_ROLES[1:] + ("branch_end",)

#: name -> the capability (the keys of the scalar form's extra rules are SolverConfig's field names).
CAPABILITIES: dict[str, Capability] = {
    **{role: Capability(f"--{role.replace('_', '-')}", True, _RANK_ONE_RULE) for role in QUADRATURE_ROLES[1:]},
    "branch_end": Capability("--branch-end", True, MATRIX_END_NOTE),
    "torch_backend": Capability("--backend torch", True, "the rank-r state evolution runs its proximal map on the "
                                "numba or numpy backend (auto picks numba)"),
    "local_prox": Capability("--prox {value}", True, "the rank-r state evolution implements the global and the "
                             "aligned proximal maps, not the local one"),
    "diagram_census": Capability("--census", True, "the phase diagram's census at alpha_c is rank r = r* = 1 only "
                                 "(run attnphase census --rank R --teacher-rank R* at one alpha)"),
    "diagram_error_estimate": Capability("--error-estimate {value}", True, "the rank-r phase diagram takes its errors "
                                         "from the rule's blocks, which its merge of one point the rule splits needs "
                                         "too: neither independent rules (K >= 2) nor none (0)"),
    "diagram_one_block_rule": Capability("--quadrature {value}", True, "the rank-r phase diagram takes its errors "
                                         "and its merge of one point the rule splits from the rule's scrambling "
                                         "blocks, and a rule of one block has none: give one of several, sobolK:4 "
                                         "(sobol9:4 has sobol11's 2048 nodes)"),
    "omega_continuation": Capability("--continuation on", True, "continuation in omega carries the r = r* = 1 "
                                     "boundaries' refinements from one omega to the next (bifurcation ends of the agnostic "
                                     "branch, alpha_c's Newton correction; docs/method.md section 13); at r >= 2 or "
                                     "r* >= 2 every omega is computed on its own (--continuation off)"),
    "correlated_tokens": Capability("--token-cov", True, "the rank-r state evolution implements independent tokens only "
                                    "(a diagonal C; correlated tokens are solved at rank r = r* = 1)"),
    "mixed_branch": Capability("--branch mixed", False, "needs --rank >= 2 (a positional and a semantic direction)"),
}


def is_scalar_form(r: int, r_star: int) -> bool:
    """r = r* = 1: the overlaps are scalars (q, m, V, theta); otherwise matrices (docs/model.md section 7)."""
    return (r, r_star) == (1, 1)


def available(name: str, r: int, r_star: int) -> bool:
    """Whether capability ``name`` exists at student rank r and teacher rank r*."""
    return is_scalar_form(r, r_star) if CAPABILITIES[name].scalar_only else r >= 2


def check(name: str, r: int, r_star: int, value: object = None) -> None:
    """ValueError ``"<option>: <reason>, got --rank r --teacher-rank r*"`` where capability ``name`` does not
    exist at (r, r*); nothing otherwise."""
    if not available(name, r, r_star):
        cap = CAPABILITIES[name]
        option = cap.option.format(value=value)
        sep = " " if cap.reason.startswith("needs") else ": "
        raise ValueError(f"{option}{sep}{cap.reason}, got --rank {r} --teacher-rank {r_star}")
