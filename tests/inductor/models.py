"""The model suite: every model, by name (models_dense, models_attention, models_conv_loss)."""

from __future__ import annotations

from tests.inductor import models_attention, models_conv_loss, models_dense
from tests.inductor.harness import Model

ALL: dict[str, Model] = {m.name: m for m in (models_dense.MODELS + models_attention.MODELS
                                             + models_conv_loss.MODELS)}
