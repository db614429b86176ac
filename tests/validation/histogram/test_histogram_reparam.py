"""Re-parameterisation: the unrestricted copy of a restricted model computes the same function."""

from __future__ import annotations

import pytest
import torch

from attnphase.validation.histogram.model import ModelConfig, build_model
from attnphase.validation.histogram.reparam import (
    embed_unrestricted,
    masked_qk_fraction,
    max_output_difference,
)


@pytest.mark.parametrize("restriction", ["positional", "semantic"])
def test_embedded_model_matches_restricted_one(restriction: str) -> None:
    config = ModelConfig(seq_len=9, n_tokens=6, d_model=24, d_hidden=16, restriction=restriction)
    model = build_model(config, torch.Generator().manual_seed(11))
    with torch.no_grad():  # move away from the initialisation so no parameter is trivial
        gen = torch.Generator().manual_seed(12)
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))
    full = embed_unrestricted(model)
    assert full.config.restriction == "both" and model.config.restriction == restriction
    x = torch.randint(0, 6, (64, 9), generator=torch.Generator().manual_seed(13))
    assert max_output_difference(model, full, x) < 1e-5
    with torch.no_grad():
        _, a = model.forward_with_attention(x)
        _, b = full.forward_with_attention(x)
    assert torch.allclose(a, b, atol=1e-6)
    assert masked_qk_fraction(full, restriction) == 0.0
    # The copy shares no storage: changing it leaves the original alone.
    with torch.no_grad():
        full.w_q.add_(1.0)
    assert max_output_difference(model, full, x) > 1e-3


def test_masked_fraction_needs_an_unrestricted_model() -> None:
    config = ModelConfig(seq_len=5, n_tokens=4, d_model=8, d_hidden=8, restriction="semantic")
    model = build_model(config, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError):
        masked_qk_fraction(model, "semantic")
    with pytest.raises(ValueError):
        masked_qk_fraction(embed_unrestricted(model), "both")
