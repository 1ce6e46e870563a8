"""The papers' classifiers and the baselines, as functional Keras models.

Every builder takes `num_classes` and either a fitted `TextEncoder` (the model then
takes raw strings) or `vocabulary_size` (the model takes int32 token ids). Each model's
`ModelSpec` (beside its builder) says what else the package needs to know about it;
`SPECS` holds them by name. Adding a model: a module with its builder and `SPEC`, and
one line below.
"""

import keras

from keras_textattn.errors import UserError
from keras_textattn.models import baselines
from keras_textattn.models import cspan
from keras_textattn.models import dual_axial
from keras_textattn.models import hcan
from keras_textattn.models import lama
from keras_textattn.models import scalable_attention
from keras_textattn.models._inputs import logits_model
from keras_textattn.models.baselines import build_bigru_classifier
from keras_textattn.models.baselines import build_han_classifier
from keras_textattn.models.baselines import build_kim_cnn_classifier
from keras_textattn.models.baselines import build_transformer_classifier
from keras_textattn.models.cspan import build_cspan_classifier
from keras_textattn.models.dual_axial import build_dual_axial_classifier
from keras_textattn.models.hcan import build_hcan_classifier
from keras_textattn.models.lama import build_lama_classifier
from keras_textattn.models.scalable_attention import build_scalable_attention_classifier
from keras_textattn.models.spec import ModelSpec
from keras_textattn_config.train_config import DTYPE_POLICIES
from keras_textattn_config.train_config import MODELS
from keras_textattn_config.train_config import PRESETS

_BY_NAME = {
    spec.name: spec
    for spec in (scalable_attention.SPEC, dual_axial.SPEC, hcan.SPEC, lama.SPEC, cspan.SPEC, *baselines.SPECS)
}
SPECS = {name: _BY_NAME[name] for name in MODELS}  # the command line knows them by these names
BUILDERS = {name: spec.build for name, spec in SPECS.items()}


def get_spec(name):
    """The `ModelSpec` of the model called `name` (a key of `SPECS`)."""
    if name not in SPECS:
        raise ValueError(f"Unknown model {name!r}. Available: {', '.join(sorted(SPECS))}")
    return SPECS[name]


def check_dtype_policy(dtype_policy):
    """A `UserError` (a `ValueError`) unless `dtype_policy` is None or one of `DTYPE_POLICIES`."""
    if dtype_policy not in (None, *DTYPE_POLICIES):
        raise UserError(
            f"dtype_policy (--dtype-policy) must be one of {', '.join(DTYPE_POLICIES)}; got {dtype_policy!r}"
        )


def build_model(name, num_classes, dtype_policy=None, **kwargs):
    """Build the classifier called `name` (a key of `SPECS`), its layers under the Keras
    `dtype_policy` (one of `DTYPE_POLICIES`; None: Keras's global policy, which is left
    as it was)."""
    check_dtype_policy(dtype_policy)
    global_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype_policy or global_policy)
    try:
        return get_spec(name).build(num_classes, **kwargs)
    finally:
        keras.config.set_dtype_policy(global_policy)


__all__ = [
    "BUILDERS",
    "DTYPE_POLICIES",
    "PRESETS",
    "SPECS",
    "ModelSpec",
    "build_model",
    "check_dtype_policy",
    "get_spec",
    "logits_model",
    "build_bigru_classifier",
    "build_cspan_classifier",
    "build_dual_axial_classifier",
    "build_han_classifier",
    "build_hcan_classifier",
    "build_kim_cnn_classifier",
    "build_lama_classifier",
    "build_scalable_attention_classifier",
    "build_transformer_classifier",
]
