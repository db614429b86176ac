"""The names of ``validate``'s outputs (``summary.json``, ``--json``), under the one rule of every output of the tool.

The campaign's code keeps its working names (``a_se``, ``<obs>_std``, a run's ``eps_g_se``); what is written is
renamed here, once (:func:`with_output_names`): an error bar ``<name>_se`` or ``<name>_err`` is ``err_<name>``, a
standard deviation over the seeds ``<obs>_std`` is ``sd_<obs>``, a distance in error bars ``distance_se`` is ``z``,
the AMP rows' bare ``se`` and ``std`` are ``err_mean_abs_theta`` and ``sd_abs_theta``; :data:`VARIABLES` states these
forms.
"""

from __future__ import annotations

from typing import Any

#: Names the suffix rule would get wrong: a distance in standard errors is not an error bar.
EXPLICIT = {"distance_se": "z", "other_distance_se": "z_other_form"}

#: What each form of name means (``summary.json``'s ``variables``).
VARIABLES = {
    "<obs>_mean": "mean over the seeds (n_runs runs) of the observable <obs> at one (alpha, d, omega, start)",
    "sd_<obs>": "standard deviation over the seeds (ddof = 1) of <obs>: the runs' spread, not an error bar; the "
                "error bar of <obs>_mean is sd_<obs> / sqrt(n_runs); null for one seed (no spread)",
    "err_<name>": "the error bar of <name> (same units): a fit's standard error (err_a, err_extrapolated, "
                  "err_fit_a), a run's Monte Carlo standard error on its test set (err_eps_g, err_eps_lin), "
                  "err_mean_abs_theta = sd_abs_theta / sqrt(n), the theory's standard error over its rule's scrambling "
                  "blocks (err_theory; err_abs_m, err_abs_theta, ... of a theory point where it was computed)",
    "z": "a distance in error bars: |extrapolated - theory| / hypot(err_extrapolated, err_theory) (finite-size "
         "verdicts), "
         "(mean_abs_theta - q0) / err_mean_abs_theta (AMP rows)",
    "z_other_form": "z of a finite-size verdict under the fit of the other form (other_form, its a other_a +- "
                    "err_other_a): where z and z_other_form lie on either side of 2 the verdict hangs on the form",
}


def output_name(key: str, siblings: Any = ()) -> str:
    """The written name of ``key`` (module doc); ``siblings``: the other keys of its object (a bare ``se`` / ``std``
    is named after the mean beside it)."""
    if key in EXPLICIT:
        return EXPLICIT[key]
    if key in ("se", "std") and "mean_abs_theta" in siblings:
        return "err_mean_abs_theta" if key == "se" else "sd_abs_theta"
    for suffix, prefix in (("_se", "err_"), ("_err", "err_"), ("_std", "sd_")):
        if key.endswith(suffix) and len(key) > len(suffix):
            return prefix + key[: -len(suffix)]
    return key


def with_output_names(obj: Any) -> Any:
    """``obj`` (a summary: dicts, lists, values) with every key renamed by :func:`output_name`; a ValueError where
    two keys of one object would get one name."""
    if isinstance(obj, dict):
        out: dict = {}
        for k, v in obj.items():
            name = output_name(str(k), obj) if isinstance(k, str) else k
            if name in out:
                raise ValueError(f"output names: {k!r} and another key are both written as {name!r}")
            out[name] = with_output_names(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [with_output_names(v) for v in obj]
    return obj


def summary_for_output(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary as ``summary.json`` and ``validate --json`` write it: renamed (:func:`with_output_names`), with
    :data:`VARIABLES` as its ``variables``."""
    return with_output_names(summary) | {"variables": dict(VARIABLES)}
