"""The papers' classifiers and the baselines, as functional Keras models.

Every builder takes `num_classes` and either a fitted `TextEncoder` (the model then
takes raw strings) or `vocabulary_size` (the model takes int32 token ids). Each model's
`ModelSpec` (beside its builder) says what else the package needs to know about it;
`SPECS` holds them by name. Adding a model: a module with its builder and `SPEC`, and
one line below.
"""

from keras_textattn.models import baselines
from keras_textattn.models import cspan
from keras_textattn.models import dual_axial
from keras_textattn.models import hcan
from keras_textattn.models import lama
from keras_textattn.models import scalable_attention
from keras_textattn.models._inputs import logits_model
from keras_textattn.models.baselines import build_bigru_classifier
from keras_textattn.models.baselines import build_kim_cnn_classifier
from keras_textattn.models.baselines import build_transformer_classifier
from keras_textattn.models.cspan import build_cspan_classifier
from keras_textattn.models.dual_axial import build_dual_axial_classifier
from keras_textattn.models.hcan import build_hcan_classifier
from keras_textattn.models.lama import build_lama_classifier
from keras_textattn.models.scalable_attention import build_scalable_attention_classifier
from keras_textattn.models.spec import PRESETS
from keras_textattn.models.spec import ModelSpec

SPECS = {
    spec.name: spec
    for spec in (scalable_attention.SPEC, dual_axial.SPEC, hcan.SPEC, lama.SPEC, cspan.SPEC, *baselines.SPECS)
}
BUILDERS = {name: spec.build for name, spec in SPECS.items()}


def get_spec(name):
    """The `ModelSpec` of the model called `name` (a key of `SPECS`)."""
    if name not in SPECS:
        raise ValueError(f"Unknown model {name!r}. Available: {', '.join(sorted(SPECS))}")
    return SPECS[name]


def build_model(name, num_classes, **kwargs):
    """Build the classifier called `name` (a key of `SPECS`)."""
    return get_spec(name).build(num_classes, **kwargs)


__all__ = [
    "BUILDERS", "PRESETS", "SPECS", "ModelSpec", "build_model", "get_spec", "logits_model",
    "build_bigru_classifier", "build_cspan_classifier", "build_dual_axial_classifier", "build_hcan_classifier",
    "build_kim_cnn_classifier", "build_lama_classifier", "build_scalable_attention_classifier",
    "build_transformer_classifier",
]
