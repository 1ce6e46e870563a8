"""Model inputs shared by the builders: raw strings through a `TextEncoder`, or ids."""

import typing

import keras
from keras import ops

from keras_textattn.embedding import RowReadEmbedding
from keras_textattn.layers import SentenceRows
from keras_textattn.vocabulary import PAD_ID


class ModelInputs(typing.NamedTuple):
    """What `text_inputs` gives a builder."""

    inputs: object  # the model's inputs: the "text" input, or "token_ids" (and "bigram_ids")
    token_ids: object  # int32 `(batch, length)` or `(batch, sentences, words)`
    bigram_ids: object  # int32 like `token_ids`, or None without bigrams
    vocabulary_size: int
    bigram_buckets: int


def text_inputs(encoder=None, vocabulary_size=None, sequence_length=None, bigram_buckets=0, hierarchical_shape=None):
    """Create the inputs of a classifier.

    With `encoder` (a `TextEncoder`, TensorFlow backend), the model takes raw strings
    `(batch,)` named "text" and encodes them in the graph; its shape is the encoder's,
    and a `sequence_length` or `bigram_buckets` that disagrees with it is refused.
    Without it, the model takes int32 ids named "token_ids" (and "bigram_ids" when
    `bigram_buckets`), of shape `(batch, sequence_length)` or `hierarchical_shape`.

    Returns:
        A `ModelInputs`.
    """
    sizes = {"sequence_length": sequence_length}
    if hierarchical_shape:
        sizes.update(max_sentences=hierarchical_shape[0], sequence_length=hierarchical_shape[1])
    for name, value in sizes.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"`{name}` must be a positive int or None. Received: {name}={value!r}")
    if isinstance(bigram_buckets, bool) or not isinstance(bigram_buckets, int) or bigram_buckets < 0:
        raise ValueError(
            f"`bigram_buckets` must be an int >= 0 (0: no bigrams). Received: bigram_buckets={bigram_buckets!r}"
        )
    if encoder is not None:
        given = {
            "sequence_length": (sequence_length, encoder.sequence_length),
            "bigram_buckets": (bigram_buckets or None, encoder.bigram_buckets or None),
        }
        for name, (value, encoder_value) in given.items():
            if value is not None and value != encoder_value:
                raise ValueError(
                    f"{name}={value} disagrees with the encoder's {name}={encoder_value}; give one or the other"
                )
        text = keras.Input(shape=(), dtype="string", name="text")
        encoded = encoder(text)
        bigrams = None
        if encoder.bigram_buckets:
            encoded, bigrams = encoded
        return ModelInputs(text, encoded, bigrams, encoder.vocabulary_size(), encoder.bigram_buckets)
    if not isinstance(vocabulary_size, int) or vocabulary_size < 3:
        raise ValueError(
            "Give a fitted `encoder`, or `vocabulary_size` (an int >= 3, padding and OOV included) "
            f"for a model fed with token ids. Received: vocabulary_size={vocabulary_size!r}"
        )
    shape = hierarchical_shape or (sequence_length,)
    ids = keras.Input(shape=shape, dtype="int32", name="token_ids")
    if not bigram_buckets:
        return ModelInputs(ids, ids, None, vocabulary_size, 0)
    bigrams = keras.Input(shape=shape, dtype="int32", name="bigram_ids")
    return ModelInputs([ids, bigrams], ids, bigrams, vocabulary_size, bigram_buckets)


def sentence_rows(model_inputs):
    """A hierarchical model's `ModelInputs` with every sentence a row: ids (and bigram ids)
    `(batch * sentences, words)`, for the word level of HCAN and HAN (`SentenceRows`: sizes
    read at call time, so batches cut to their most sentences and longest sentence pass)."""
    bigram_ids = model_inputs.bigram_ids
    return model_inputs._replace(
        token_ids=SentenceRows(name="sentence_rows")(model_inputs.token_ids),
        bigram_ids=None if bigram_ids is None else SentenceRows(name="bigram_sentence_rows")(bigram_ids),
    )


def embed_tokens(model_inputs, dim, name="embedding"):
    """Token embeddings `(..., dim)`, plus the hashed bigrams' embeddings when the inputs have them.

    Bigrams are fastText's trick (Joulin et al., 2017) and the dual-axial paper's input
    (section 4): each token's vector is summed with the vector of the bigram it starts
    (the encoder's `bigram_buckets`; id 0, no next token, has a vector too, and padded
    steps are masked by the layers after this one). No Keras mask is attached: the
    builders pass `padding_mask(ids)` to each layer explicitly, so that no `Add` or
    reshape can drop it. The token embedding is the layer called `name`, the one
    `keras_textattn.training` initialises from pretrained vectors.
    """
    vectors = RowReadEmbedding(model_inputs.vocabulary_size, dim, name=name)(model_inputs.token_ids)
    if model_inputs.bigram_ids is None:
        return vectors
    bigram_vectors = RowReadEmbedding(model_inputs.bigram_buckets + 1, dim, name=f"bigram_{name}")(
        model_inputs.bigram_ids
    )
    return keras.layers.Add(name=f"add_bigram_{name}")([vectors, bigram_vectors])


def padding_mask(ids):
    """`(batch, ...)` booleans, True for real tokens: every id but `PAD_ID`."""
    return ops.not_equal(ids, PAD_ID)


def classifier_head(features, num_classes, multi_label=False, name="probabilities"):
    """The softmax output every paper's classifier ends with: a Dense layer "logits" and its
    softmax `name`, both float32 under mixed precision. Two layers, so that `logits_model`
    can train on the logits (see there). With `multi_label`, `num_classes` independent sigmoids
    instead (a text may have any set of the labels: binary cross-entropy trains them)."""
    if not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"`num_classes` must be an int >= 2. Received: num_classes={num_classes!r}")
    if not isinstance(multi_label, bool):
        raise ValueError(f"`multi_label` must be True or False. Received: multi_label={multi_label!r}")
    logits = keras.layers.Dense(num_classes, dtype="float32", name="logits")(features)
    if multi_label:
        return keras.layers.Activation("sigmoid", dtype="float32", name=name)(logits)
    return keras.layers.Softmax(dtype="float32", name=name)(logits)


def logits_model(model):
    """`model` (a builder's classifier) without its final softmax, sharing its weights.

    Train it with `SparseCategoricalCrossentropy(from_logits=True)` on JAX and PyTorch.
    The classifiers output probabilities (the papers' softmax); TensorFlow's cross-entropy
    reads the logits behind a softmax, the other backends' clip the probabilities, so a
    prediction that saturates (probability 1.0 in float32) has a zero gradient there and
    the model stops learning for good (CSPAN at the paper's sizes on long texts, on JAX, could
    stay at chance). Training the logits
    model updates `model`, which keeps serving probabilities.
    """
    return keras.Model(
        model.input, model.get_layer("logits").output, name=f"{model.name}_logits"
    )  # called as `model` is
