"""Seeded training: a tiny run clearly beats the majority class, and repeats exactly."""

from __future__ import annotations

import pytest
import torch

from attnphase.validation.histogram.data import majority_baseline, make_dataset
from attnphase.validation.histogram.model import ModelConfig, build_model
from attnphase.validation.histogram.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")



def _data():
    return make_dataset(1500, 6, 4, 0.2, torch.Generator().manual_seed(0))


def _train(restriction: str, epochs: int):
    config = ModelConfig(seq_len=6, n_tokens=4, d_model=32, d_hidden=32, restriction=restriction)
    model = build_model(config, torch.Generator().manual_seed(1))
    return train(model, _data(), TrainConfig(epochs=epochs, lr=3e-3), torch.Generator().manual_seed(2))


@pytest.mark.parametrize("restriction", ["positional", "semantic"])
def test_tiny_run_beats_majority_baseline(restriction: str) -> None:
    data = _data()
    baseline = majority_baseline(data.train_y, data.val_y)
    curve = _train(restriction, epochs=10)
    assert len(curve) == 11 and curve[0].epoch == 0
    assert curve[-1].val_acc > baseline + 0.25, (baseline, curve[-1])
    assert curve[-1].train_loss < curve[0].train_loss


def test_training_is_reproducible() -> None:
    assert _train("both", epochs=2) == _train("both", epochs=2)


@pytest.mark.parametrize(
    "bad", [dict(epochs=-1), dict(batch_size=0), dict(lr=0.0), dict(lr=float("nan")), dict(optimizer="lbfgs")]
)
def test_bad_train_config_raises(bad: dict) -> None:
    with pytest.raises(ValueError):
        TrainConfig(**bad)
