"""The histogram job's dataset ``histogram.nc`` (xarray, netCDF; :mod:`attnphase.execution.dataset`): per
``variant`` its metrics, task status and re-parameterisation numbers (NaN for the variants trained from scratch),
the training curves on (``variant``, ``epoch``), the attention maps on (``variant``, ``example``, ``query``,
``key``), the plotted inputs ``tokens`` on (``example``, ``position``); docs/histogram.md, "Outputs in DIR".
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np

from attnphase.execution.dataset import Variable, job_attrs
from attnphase.validation.histogram.experiment import ExperimentResult


def histogram_attrs(result: ExperimentResult, version: str, command: str = "") -> dict[str, Any]:
    return job_attrs("histogram", version=version, command=command, config=dataclasses.asdict(result.config),
                     title="The histogram task of section 2: positional and semantic attention, trained",
                     seed=result.seed, device=result.device, n_train=result.n_train, n_val=result.n_val,
                     majority_acc=result.majority_acc)


def histogram_dataset(result: ExperimentResult, status: Mapping[str, str], attrs: dict[str, Any]) -> Any:
    """The dataset of ``result`` (module docstring); ``status``: each variant's task status."""
    import xarray as xr

    names = list(result.variants)
    vs = [result.variants[n] for n in names]
    nan = float("nan")

    def per_variant(values: list[Any], long_name: str, units: str | None = "1") -> tuple[Any, ...]:
        arr = np.asarray(values)
        if arr.dtype.kind in "US":
            return ("variant",), arr.astype(object), Variable("", long_name, None).attrs()
        return ("variant",), arr, Variable("", long_name, units).attrs()

    dv: dict[str, Any] = {
        "restriction": per_variant([v.restriction for v in vs], "what the attention's queries and keys see"),
        "val_acc": per_variant([v.val_acc for v in vs], "final per-position validation accuracy"),
        "val_loss": per_variant([v.val_loss for v in vs], "final validation cross-entropy"),
        "score": per_variant([v.score.score for v in vs], "attention score r_sem - r_pos"),
        "r_sem": per_variant([v.score.r_sem for v in vs], "correlation with the token-equality matrix"),
        "r_pos": per_variant([v.score.r_pos for v in vs], "correlation with the mean attention pattern"),
        "train_seconds": per_variant([v.train_seconds for v in vs], "wall time of the variant's task", "s"),
        "status": per_variant([status.get(n, "") for n in names], "task status"),
        "source": per_variant([v.reparam.source if v.reparam else "" for v in vs], "restricted variant embedded"),
    }
    for field, text in (("max_output_diff", "max |logit difference|, restricted vs embedded"),
                        ("masked_qk_fraction", "share of |W_Q|^2 + |W_K|^2 in the rows the source masked"),
                        ("before_val_acc", "validation accuracy of the embedded model before retraining"),
                        ("before_val_loss", "validation cross-entropy before retraining")):
        dv[field] = per_variant([getattr(v.reparam, field) if v.reparam else nan for v in vs], text)
    for field, text in (("score", "attention score r_sem - r_pos before retraining"),
                        ("r_sem", "correlation with the token-equality matrix before retraining"),
                        ("r_pos", "correlation with the mean attention pattern before retraining")):
        dv[f"before_{field}"] = per_variant([getattr(v.reparam.before_score, field) if v.reparam else nan for v in vs],
                                            text)
    n_epochs = max(len(v.curve) for v in vs)
    for field, text in CURVE_NAMES.items():
        curve = np.full((len(vs), n_epochs), nan)
        for i, v in enumerate(vs):
            curve[i, : len(v.curve)] = [getattr(rec, field) for rec in v.curve]
        dv[f"curve_{field}"] = (("variant", "epoch"), curve,
                                Variable("", text, "1", "NaN past the variant's last epoch").attrs())
    dv["attention"] = (("variant", "example", "query", "key"), np.stack([result.attention[n].numpy() for n in names]),
                       Variable("", "attention weight of the query position on the key position, on the plotted "
                                "validation inputs").attrs())
    dv["tokens"] = (("example", "position"), result.examples.numpy(),
                    Variable("", "token of the plotted validation input at each position").attrs())
    L = result.config.seq_len
    coords = {"variant": (np.array(names, dtype=object), "variant of the attention model", None),
              "epoch": (np.arange(n_epochs), "training epoch (0: before training)", "1"),
              "example": (np.arange(result.examples.shape[0]), "index of the plotted validation input", "1"),
              "query": (np.arange(L), "query position", "1"), "key": (np.arange(L), "key position", "1"),
              "position": (np.arange(L), "position in the sequence", "1")}
    coords = {k: (k, v, Variable(k, text, units).attrs()) for k, (v, text, units) in coords.items()}
    return xr.Dataset(dv, coords=coords, attrs=attrs)


#: The training curves (``curve_<field>``, fields of :class:`~.train.EpochRecord`) and their long names.
CURVE_NAMES = {"train_loss": "training cross-entropy, mean over the epoch's minibatches (epoch 0: the initial model)",
               "train_acc": "per-position training accuracy, mean over the epoch's minibatches (epoch 0: the initial "
                            "model)",
               "val_loss": "validation cross-entropy after each epoch",
               "val_acc": "per-position validation accuracy after each epoch"}
