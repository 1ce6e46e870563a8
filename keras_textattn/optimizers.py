"""Adam and SGD whose updates of an embedding table touch only the rows a batch used.

TensorFlow gives the gradient of a table read by `gather` (Keras's `Embedding`) as a
`tf.IndexedSlices`: the rows looked up and their gradients. Keras's Adam and SGD turn it dense
(`m - gradient` is a dense tensor), so every step reads and writes the whole table, its moments
and its weights, whichever rows the batch used: for a table of bigram buckets the update costs
many times the forward and backward pass. The lazy versions here update only the rows a batch
used, as TensorFlow's old `LazyAdamOptimizer`, PyTorch's `SparseAdam` and fastText do: a row's
moments and weights stay as they are in a step that does not use it (with plain Adam, its
moments decay and the weight keeps moving). Every gradient that is not sparse (the other
weights) is updated exactly as Keras does.

A table updated row by row is best read row by row too: `keras_textattn.embedding.RowReadEmbedding`
(the paper models' tables) does, where Keras's `Embedding` copies the whole table at each call.

Sparse gradients exist only on TensorFlow. JAX and PyTorch give an embedding table's gradient as
a dense array, so there these optimizers are Keras's Adam and SGD, every row updated (a model
trained with them, saved on TensorFlow, loads and trains on any backend).
"""

import keras
from keras import ops


def _sparse(gradient):
    """`gradient`'s rows and their gradients with repeated rows summed, when it is sparse; else None."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    if not isinstance(gradient, tf.IndexedSlices):
        return None
    rows, positions = tf.unique(gradient.indices)
    return rows, tf.math.unsorted_segment_sum(gradient.values, positions, tf.shape(rows)[0])


def _rows_of(variable, rows):
    """`variable[rows]`, read row by row (`sparse_read`), not the whole table first."""
    import tensorflow as tf

    return tf.gather(variable if isinstance(variable, tf.Variable) else variable.value, rows)


def _at(rows, values):
    import tensorflow as tf

    return tf.IndexedSlices(values, rows)


def _move_rows(optimizer, variable, rows, change):
    """`variable[rows] += change` (rows without repeats) as a read of the rows and a write of their
    new values: TensorFlow's CPU kernels that add to or subtract from rows in place are several times
    slower than the one that writes rows."""
    optimizer.assign(variable, _at(rows, _rows_of(variable, rows) + change))


@keras.saving.register_keras_serializable(package="keras_textattn")
class LazyAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` (same arguments) that updates only the embedding rows a batch used.

    For a sparse gradient with rows `r` and gradients `g` (repeats summed), at step `t`:
    `m[r] = beta_1 m[r] + (1 - beta_1) g`, `v[r] = beta_2 v[r] + (1 - beta_2) g^2`, and
    `w[r] -= lr sqrt(1 - beta_2^t) / (1 - beta_1^t) m[r] / (sqrt(v[r]) + epsilon)`, Keras's Adam
    on those rows; other rows are left as they are. Dense gradients (all of them on JAX and
    PyTorch): Keras's Adam.
    """

    def update_step(self, gradient, variable, learning_rate):
        sparse = _sparse(gradient)
        if sparse is None:
            return super().update_step(gradient, variable, learning_rate)
        rows, values = sparse
        dtype = variable.dtype
        values = ops.cast(values, dtype)
        step = ops.cast(self.iterations + 1, dtype)
        alpha = (
            ops.cast(learning_rate, dtype)
            * ops.sqrt(1 - ops.power(ops.cast(self.beta_2, dtype), step))
            / (1 - ops.power(ops.cast(self.beta_1, dtype), step))
        )
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        m_rows = self.beta_1 * _rows_of(m, rows) + (1 - self.beta_1) * values
        v_rows = self.beta_2 * _rows_of(v, rows) + (1 - self.beta_2) * ops.square(values)
        self.assign(m, _at(rows, m_rows))
        self.assign(v, _at(rows, v_rows))
        if self.amsgrad:
            v_hat = self._velocity_hats[index]
            v_rows = ops.maximum(_rows_of(v_hat, rows), v_rows)
            self.assign(v_hat, _at(rows, v_rows))
        _move_rows(self, variable, rows, -alpha * m_rows / (ops.sqrt(v_rows) + self.epsilon))


@keras.saving.register_keras_serializable(package="keras_textattn")
class LazySGD(keras.optimizers.SGD):
    """`keras.optimizers.SGD` (same arguments) that updates only the embedding rows a batch used.

    For a sparse gradient with rows `r` and gradients `g` (repeats summed): without momentum
    `w[r] -= lr g`; with it `m[r] = momentum m[r] - lr g` and `w[r] += m[r]` (Nesterov:
    `w[r] += momentum m[r] - lr g`), Keras's SGD on those rows; other rows, and their momentum,
    are left as they are. Dense gradients (all of them on JAX and PyTorch): Keras's SGD.
    """

    def update_step(self, gradient, variable, learning_rate):
        sparse = _sparse(gradient)
        if sparse is None:
            return super().update_step(gradient, variable, learning_rate)
        rows, values = sparse
        step = ops.cast(learning_rate, variable.dtype) * ops.cast(values, variable.dtype)
        if self.momentum == 0:
            _move_rows(self, variable, rows, -step)
            return
        m = self.momentums[self._get_variable_index(variable)]
        m_rows = self.momentum * _rows_of(m, rows) - step
        self.assign(m, _at(rows, m_rows))
        _move_rows(self, variable, rows, self.momentum * m_rows - step if self.nesterov else m_rows)
