"""A hierarchical classifier's reshapes between its word and sentence levels (HCAN, HAN).

Both take their sizes from the tensors they are called on, not from the shapes the model was
built on, so a model of them reads batches cut to their most sentences and their longest
sentence (`datasets.make_batches`' `cut_padding`) as it reads batches padded to its sizes.
"""

import keras
from keras import ops


def _check_rank(layer, name, shape, least):
    if len(shape) < least:
        raise ValueError(
            f"{type(layer).__name__} expects {name} of rank {least} or more; received shape {tuple(shape)}"
        )


@keras.saving.register_keras_serializable(package="keras_textattn")
class SentenceRows(keras.layers.Layer):
    """`(batch, sentences, words, ...)` to `(batch * sentences, words, ...)`: every sentence of
    every document a row, for the word level.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import SentenceRows
    >>> ids = np.arange(24, dtype="int32").reshape(2, 3, 4)  # (documents, sentences, words)
    >>> rows = ops.convert_to_numpy(SentenceRows()(ids))
    >>> rows.shape  # a row per sentence
    (6, 4)
    >>> rows[3].tolist()  # the second document's first sentence
    [12, 13, 14, 15]
    """

    def build(self, input_shape):
        _check_rank(self, "ids", input_shape, 3)

    def call(self, inputs):
        shape = ops.shape(inputs)
        return ops.reshape(inputs, (-1, *shape[2:]))

    def compute_output_shape(self, input_shape):
        _check_rank(self, "ids", input_shape, 3)
        batch, sentences = input_shape[:2]
        rows = None if batch is None or sentences is None else batch * sentences
        return (rows, *input_shape[2:])


@keras.saving.register_keras_serializable(package="keras_textattn")
class DocumentSentences(keras.layers.Layer):
    """Sentence vectors `(batch * sentences, features)` back to `(batch, sentences, features)`,
    the sentences per document read off the documents' ids `(batch, sentences, words)`, for the
    sentence level.

    Call arguments:
        inputs: `[sentence_vectors, document_ids]`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import DocumentSentences
    >>> vectors = np.arange(12, dtype="float32").reshape(6, 2)  # a vector per sentence row
    >>> ids = np.ones((2, 3, 4), "int32")  # 2 documents of 3 sentences of 4 words
    >>> sentences = ops.convert_to_numpy(DocumentSentences()([vectors, ids]))
    >>> sentences.shape
    (2, 3, 2)
    >>> sentences[1, 0].tolist()  # the fourth row: the second document's first sentence
    [6.0, 7.0]
    """

    def build(self, input_shape):
        vectors_shape, ids_shape = input_shape
        _check_rank(self, "sentence vectors", vectors_shape, 2)
        _check_rank(self, "document ids", ids_shape, 3)

    def call(self, inputs):
        vectors, ids = inputs
        shape = ops.shape(ids)
        return ops.reshape(vectors, (shape[0], shape[1], vectors.shape[-1]))

    def compute_output_shape(self, input_shape):
        vectors_shape, ids_shape = input_shape
        return (ids_shape[0], ids_shape[1], vectors_shape[-1])
