"""The baselines the papers compare against: a Transformer encoder ("TE"), BiGRU with
max pooling, Kim's CNN, and HCAN's hierarchical attention network (HAN)."""

import keras
from keras import ops

from keras_textattn.layers import DocumentSentences
from keras_textattn.layers import MaskedGlobalAveragePooling1D
from keras_textattn.layers import MaskedGlobalMaxPooling1D
from keras_textattn.layers import MultiQueryAttention
from keras_textattn.layers import PositionEmbedding
from keras_textattn.models._inputs import classifier_head
from keras_textattn.models._inputs import embed_tokens
from keras_textattn.models._inputs import padding_mask
from keras_textattn.models._inputs import sentence_rows
from keras_textattn.models._inputs import text_inputs
from keras_textattn.models.spec import ModelSpec


def build_transformer_classifier(
    num_classes,
    vocabulary_size=None,
    encoder=None,
    sequence_length=None,
    units=512,
    num_heads=8,
    feedforward_units=1024,
    dropout=0.1,
    max_length=None,
    bigram_buckets=0,
    multi_label=False,
    name="transformer_encoder",
):
    """One Transformer encoder layer on `keras.layers.MultiHeadAttention` (the LAMA
    paper's TE: d_model 512, 8 heads), post-norm, masked mean pooling, softmax.
    Learned positions up to `max_length` (default: the sequence length, else 512).
    `bigram_buckets` (every baseline): hashed bigrams added to the embeddings (`embed_tokens`).
    """
    model_inputs = text_inputs(encoder, vocabulary_size, sequence_length, bigram_buckets)
    length = max_length or (encoder.sequence_length if encoder is not None else sequence_length) or 512
    mask = padding_mask(model_inputs.token_ids)
    x = embed_tokens(model_inputs, units)
    x = PositionEmbedding(length, name="positions")(x)
    attention_mask = ops.logical_and(ops.expand_dims(mask, 1), ops.expand_dims(mask, 2))
    attended = keras.layers.MultiHeadAttention(num_heads, units // num_heads, dropout=dropout, name="attention")(
        x, x, attention_mask=attention_mask
    )
    x = keras.layers.LayerNormalization(name="attention_norm")(x + keras.layers.Dropout(dropout)(attended))
    ff = keras.layers.Dense(feedforward_units, activation="relu", name="feedforward_in")(x)
    ff = keras.layers.Dense(units, name="feedforward_out")(keras.layers.Dropout(dropout)(ff))
    x = keras.layers.LayerNormalization(name="feedforward_norm")(x + ff)
    x = MaskedGlobalAveragePooling1D(name="mean_pool")(x, mask=mask)
    return keras.Model(model_inputs.inputs, classifier_head(x, num_classes, multi_label), name=name)


def build_bigru_classifier(
    num_classes,
    vocabulary_size=None,
    encoder=None,
    sequence_length=None,
    embedding_dim=100,
    gru_units=50,
    bigram_buckets=0,
    multi_label=False,
    name="bigru",
):
    """Embedding, BiGRU, masked max pooling over time, softmax."""
    model_inputs = text_inputs(encoder, vocabulary_size, sequence_length, bigram_buckets)
    mask = padding_mask(model_inputs.token_ids)
    x = embed_tokens(model_inputs, embedding_dim)
    x = keras.layers.Bidirectional(keras.layers.GRU(gru_units, return_sequences=True), name="bigru")(x, mask=mask)
    x = MaskedGlobalMaxPooling1D(name="max_pool")(x, mask=mask)
    return keras.Model(model_inputs.inputs, classifier_head(x, num_classes, multi_label), name=name)


def build_kim_cnn_classifier(
    num_classes,
    vocabulary_size=None,
    encoder=None,
    sequence_length=None,
    embedding_dim=300,
    filters=100,
    kernel_sizes=(3, 4, 5),
    dropout=0.5,
    bigram_buckets=0,
    multi_label=False,
    name="kim_cnn",
):
    """Kim (2014): convolutions of widths 3, 4, 5 with 100 maps each, ReLU, max over
    time (padding masked), concatenated, dropout 0.5, softmax."""
    model_inputs = text_inputs(encoder, vocabulary_size, sequence_length, bigram_buckets)
    mask = padding_mask(model_inputs.token_ids)
    x = embed_tokens(model_inputs, embedding_dim)
    # Padded steps become zeros, the convolutions' own "same" padding: a window that
    # overlaps the padding then sees the same input however the text is padded.
    x = x * ops.expand_dims(ops.cast(mask, x.dtype), -1)
    pooled = [
        MaskedGlobalMaxPooling1D(name=f"max_pool_{k}")(
            keras.layers.Conv1D(filters, k, padding="same", activation="relu", name=f"conv_{k}")(x), mask=mask
        )
        for k in kernel_sizes
    ]
    x = keras.layers.Dropout(dropout, name="dropout")(keras.layers.Concatenate(name="concat")(pooled))
    return keras.Model(model_inputs.inputs, classifier_head(x, num_classes, multi_label), name=name)


def build_han_classifier(
    num_classes,
    vocabulary_size=None,
    encoder=None,
    sequence_length=None,
    max_sentences=None,
    units=64,
    bigram_buckets=0,
    multi_label=False,
    name="han",
):
    """Yang et al.'s (2016) hierarchical attention network, HCAN's RNN baseline: per sentence a
    BiGRU over the words (`units / 2` per direction) pooled by attention, then a BiGRU over the
    sentence vectors pooled the same way, softmax. The attention is `MultiQueryAttention` with one
    query: HAN's `u = tanh(W h + b)`, `alpha = softmax(u . u_w)`, `sum alpha h`, followed by a
    linear map of the pooled vector that HAN does not have. Inputs `(batch, max_sentences,
    sequence_length)`, as HCAN's (an encoder with `hierarchical=True` or the two sizes)."""
    if encoder is not None:
        max_sentences, sequence_length = encoder.max_sentences, encoder.sequence_length
    if max_sentences is None or sequence_length is None:
        raise ValueError(
            "HAN needs fixed sizes: give sequence_length and max_sentences, or a hierarchical encoder with them. "
            f"Received: sequence_length={sequence_length}, max_sentences={max_sentences}"
        )
    model_inputs = text_inputs(
        encoder, vocabulary_size, sequence_length, bigram_buckets, hierarchical_shape=(max_sentences, sequence_length)
    )
    sentence_inputs = sentence_rows(model_inputs)
    word_mask = padding_mask(sentence_inputs.token_ids)
    sentence_mask = ops.any(padding_mask(model_inputs.token_ids), axis=-1)
    x = embed_tokens(sentence_inputs, units)
    for level, mask in (("word", word_mask), ("sentence", sentence_mask)):
        if level == "sentence":
            x = DocumentSentences(name="document_sentences")([x, model_inputs.token_ids])
        x = keras.layers.Bidirectional(keras.layers.GRU(units // 2, return_sequences=True), name=f"{level}_bigru")(
            x, mask=mask
        )
        x = MultiQueryAttention(num_queries=1, name=f"{level}_attention")(x, mask=mask)
    return keras.Model(model_inputs.inputs, classifier_head(x, num_classes, multi_label), name=name)


# cpu presets: sizes that train on 2 cores in minutes, faster than the papers' (the Transformer encoder
# most, the BiGRU least).
SPECS = (
    ModelSpec(
        "transformer",
        build_transformer_classifier,
        cpu_defaults={"units": 64, "num_heads": 4, "feedforward_units": 128},
        embedding_size_argument="units",
        reads_any_length=True,
    ),
    ModelSpec(
        "bigru", build_bigru_classifier, cpu_defaults={"embedding_dim": 64, "gru_units": 32}, reads_any_length=True
    ),
    ModelSpec(
        "kim_cnn", build_kim_cnn_classifier, cpu_defaults={"embedding_dim": 64, "filters": 64}, reads_any_length=True
    ),
)
