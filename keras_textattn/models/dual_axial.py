"""The dual-axial classifier (dual_axial_self_attention.md, section 4) and its ablations."""

import keras

from keras_textattn.layers import DualAxialSelfAttention
from keras_textattn.models._inputs import classifier_head
from keras_textattn.models._inputs import embed_tokens
from keras_textattn.models._inputs import padding_mask
from keras_textattn.models._inputs import text_inputs
from keras_textattn.models.spec import ModelSpec

VARIANTS = {
    "dual_axial": {},
    "softmax": {"score_activation": "softmax"},
    "text_axial": {"use_feature_axis": False},
    "text_axial_no_attenuation": {"use_feature_axis": False, "use_attenuation": False},
}


def build_dual_axial_classifier(
    num_classes,
    vocabulary_size=None,
    encoder=None,
    sequence_length=None,
    bigram_buckets=0,
    embedding_dim=100,
    fc_units=256,
    variant="dual_axial",
    aggregation="sum",
    multi_label=False,
    name="dual_axial",
):
    """Embedding plus bigram embedding, `DualAxialSelfAttention`, FC with sigmoid, softmax.

    The paper adds bigram information to the input (section 4): here each token's
    embedding is summed with the embedding of its hashed bigram (the encoder's
    `bigram_buckets`). `variant` picks the paper's ablations of Table 3:
    "dual_axial", "softmax" (Dual-axial SA w/ softmax), "text_axial" (Text-axial SA),
    "text_axial_no_attenuation". Sizes the paper does not give: embedding 100 and
    |fc| 256. The feature axis needs a static `sequence_length`. `aggregation="mean"`
    replaces Eq. 13's sum over tokens by a mean (see `DualAxialSelfAttention`), for long texts.
    """
    if variant not in VARIANTS:
        raise ValueError(f"`variant` must be one of {sorted(VARIANTS)}. Received: variant={variant!r}")
    options = VARIANTS[variant]
    length = encoder.sequence_length if encoder is not None else sequence_length
    if options.get("use_feature_axis", True) and length is None:
        raise ValueError("The feature-axial attention needs a static `sequence_length` (or an encoder with one).")
    model_inputs = text_inputs(encoder, vocabulary_size, sequence_length, bigram_buckets)
    x = embed_tokens(model_inputs, embedding_dim)
    x = DualAxialSelfAttention(aggregation=aggregation, name="attention", **options)(
        x, mask=padding_mask(model_inputs.token_ids)
    )
    x = keras.layers.Dense(fc_units, activation="sigmoid", name="fc")(x)
    return keras.Model(model_inputs.inputs, classifier_head(x, num_classes, multi_label), name=name)


# cpu preset: embedding 32, FC 64 (several times the paper's sizes' training speed on 2 cores).
SPEC = ModelSpec(
    "dual_axial", build_dual_axial_classifier, bigrams=True, cpu_defaults={"embedding_dim": 32, "fc_units": 64}
)
