"""CSPAN (cspan_cascaded_semantic_positional.md, section 2, Figure 1)."""

import keras

from keras_textattn.layers import CascadedSemanticPositional
from keras_textattn.layers import MultiQueryAttention
from keras_textattn.models._inputs import classifier_head
from keras_textattn.models._inputs import padding_mask
from keras_textattn.models._inputs import text_inputs
from keras_textattn.models.spec import ModelSpec

CONFIGURATIONS = {"base": {"lstm_layers": 1, "num_queries": 16}, "big": {"lstm_layers": 3, "num_queries": 128}}


def build_cspan_classifier(
    num_classes,
    vocabulary_size=None,
    encoder=None,
    sequence_length=None,
    embedding_dim=300,
    configuration="base",
    lstm_layers=None,
    num_queries=None,
    name="cspan",
):
    """Embedding (300), `CascadedSemanticPositional` (Bi-LSTM 150 per direction),
    `MultiQueryAttention`, softmax (Eq. 14-15).

    `configuration` is the paper's "base" (1 Bi-LSTM layer, 16 queries) or "big"
    (3 layers, 128 queries, section 3.1); `lstm_layers` / `num_queries` override it.
    The Bi-LSTM has `embedding_dim / 2` units per direction (Eq. 9).
    """
    if configuration not in CONFIGURATIONS:
        raise ValueError(f"`configuration` must be one of {sorted(CONFIGURATIONS)}. Received: {configuration!r}")
    options = dict(CONFIGURATIONS[configuration])
    options.update({k: v for k, v in {"lstm_layers": lstm_layers, "num_queries": num_queries}.items() if v is not None})
    inputs, ids, _, vocabulary_size, _ = text_inputs(encoder, vocabulary_size, sequence_length)
    mask = padding_mask(ids)
    x = keras.layers.Embedding(vocabulary_size, embedding_dim, name="embedding")(ids)
    x = CascadedSemanticPositional(lstm_layers=options["lstm_layers"], name="cascade")(x, mask=mask)
    x = MultiQueryAttention(num_queries=options["num_queries"], name="multi_query")(x, mask=mask)
    return keras.Model(inputs, classifier_head(x, num_classes), name=name)


SPEC = ModelSpec("cspan", build_cspan_classifier)
