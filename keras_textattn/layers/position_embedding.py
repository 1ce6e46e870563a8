"""Learned absolute position embeddings (HCAN section 3.6; the Transformer baseline)."""

import keras
from keras import ops

from keras_textattn.layers import _attention_utils as utils


@keras.saving.register_keras_serializable(package="keras_textattn")
class PositionEmbedding(keras.layers.Layer):
    """Adds a learned vector per position: `x[:, t] + P[t]` (HCAN section 3.6).

    Args:
        max_length: the longest sequence; inputs may be shorter (they use the
            first rows of P).
        initializer: of P; HCAN uses randomly initialised, learned embeddings.

    Call arguments:
        inputs: `(batch, time, features)` with `time <= max_length`.
        mask: optional padding mask, propagated unchanged (padded steps get a
            position vector too; the layers after it ignore them).

    Returns:
        `(batch, time, features)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import PositionEmbedding
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> tuple(PositionEmbedding(max_length=6)(x).shape)
    (2, 6, 8)
    """

    def __init__(self, max_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        utils.check_positive_int("PositionEmbedding", "max_length", max_length)
        self.max_length = max_length
        self.initializer = keras.initializers.get(initializer)
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = utils.check_sequence_shape("PositionEmbedding", input_shape)
        if input_shape[1] is not None and input_shape[1] > self.max_length:
            raise ValueError(
                f"PositionEmbedding: inputs are longer than max_length. "
                f"Received: time={input_shape[1]}, max_length={self.max_length}"
            )
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.max_length, input_shape[-1]), initializer=self.initializer
        )

    def call(self, inputs, mask=None):
        utils.check_call_inputs(self, inputs, mask)
        time = ops.shape(inputs)[1]
        positions = ops.slice(ops.cast(self.embeddings, inputs.dtype), (0, 0), (time, inputs.shape[-1]))
        return inputs + ops.expand_dims(positions, 0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"max_length": self.max_length, "initializer": keras.initializers.serialize(self.initializer)})
        return config
