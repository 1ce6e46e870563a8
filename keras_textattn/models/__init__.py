"""The papers' classifiers and the baselines, as functional Keras models.

Every builder takes `num_classes` and either a fitted `TextEncoder` (the model then
takes raw strings) or `vocabulary_size` (the model takes int32 token ids).
"""

from keras_textattn.models.baselines import build_bigru_classifier
from keras_textattn.models.baselines import build_kim_cnn_classifier
from keras_textattn.models.baselines import build_transformer_classifier
from keras_textattn.models.cspan import build_cspan_classifier
from keras_textattn.models.dual_axial import build_dual_axial_classifier
from keras_textattn.models.hcan import build_hcan_classifier
from keras_textattn.models.lama import build_lama_classifier
from keras_textattn.models.scalable_attention import build_scalable_attention_classifier

BUILDERS = {
    "scalable_attention": build_scalable_attention_classifier,
    "dual_axial": build_dual_axial_classifier,
    "hcan": build_hcan_classifier,
    "lama": build_lama_classifier,
    "cspan": build_cspan_classifier,
    "transformer": build_transformer_classifier,
    "bigru": build_bigru_classifier,
    "kim_cnn": build_kim_cnn_classifier,
}


def build_model(name, num_classes, **kwargs):
    """Build the classifier called `name` (a key of `BUILDERS`)."""
    if name not in BUILDERS:
        raise ValueError(f"Unknown model {name!r}. Available: {', '.join(sorted(BUILDERS))}")
    return BUILDERS[name](num_classes, **kwargs)


__all__ = ["BUILDERS", "build_model"] + [builder.__name__ for builder in BUILDERS.values()]
