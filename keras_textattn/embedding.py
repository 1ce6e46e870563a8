"""An `Embedding` that reads only the rows it looks up, for the tables the lazy optimizers update
row by row (`keras_textattn.optimizers`). Not in `keras_textattn.layers`, whose layers use `keras.ops`
only: reading rows from a variable is TensorFlow's own (`sparse_read`)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_textattn")
class RowReadEmbedding(keras.layers.Embedding):
    """`keras.layers.Embedding` (same arguments, weights and outputs) that reads the rows it looks
    up from its table (the variable's `sparse_read`) instead of the whole table and then the rows.

    Why: once a TensorFlow variable has been updated row by row (`LazyAdam`, `LazySGD`, or any
    `scatter_*` op), every read of it whole copies it, so that the reader does not see later
    writes; Keras's `Embedding` reads its table whole at each call, which for a large table (the
    hashed bigrams') costs a copy of the table per training step and per predicted batch. On
    JAX and PyTorch, quantized or with LoRA, it is Keras's `Embedding`.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> from keras_textattn.embedding import RowReadEmbedding
    >>> ids = np.array([[1, 2, 0]])  # (batch, time); 0 is padding
    >>> layer = RowReadEmbedding(10, 4, mask_zero=True)
    >>> vectors = keras.ops.convert_to_numpy(layer(ids))
    >>> vectors.shape
    (1, 3, 4)
    >>> bool(np.all(vectors[0, 1] == keras.ops.convert_to_numpy(layer.embeddings)[2]))
    True
    >>> keras.ops.convert_to_numpy(layer.compute_mask(ids)).tolist()
    [[True, True, False]]
    """

    def call(self, inputs):
        if keras.backend.backend() != "tensorflow" or self.lora_enabled:
            return super().call(inputs)
        import tensorflow as tf

        table = self.embeddings.value  # the tf.Variable: `Embedding` does not autocast its table
        if inputs.dtype not in ("int32", "int64"):
            inputs = ops.cast(inputs, "int32")
        return ops.cast(tf.gather(table, inputs), self.compute_dtype)
