"""The layers' stable softplus (`_attention_utils.softplus`) and its hand-written gradient,
on every backend (CI runs this module under KERAS_BACKEND=tensorflow, jax and torch)."""

import keras
import numpy as np

from keras_textattn.layers import _attention_utils as utils

X = np.array([-1000.0, -30.0, -1.0, 0.0, 0.5, 20.0, 1000.0], "float32")


def _gradient(function, x):
    """The gradient of `sum(function(x))` at the NumPy array `x`, by this backend's autodiff."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(function(x))
        return tape.gradient(total, x).numpy()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(lambda v: function(v).sum())(x))
    import torch

    x = torch.tensor(x, requires_grad=True)
    function(x).sum().backward()
    return x.grad.numpy()


def test_softplus_is_finite_and_its_gradient_is_the_sigmoid_times_the_upstream():
    values = keras.ops.convert_to_numpy(utils.softplus(keras.ops.convert_to_tensor(X)))
    np.testing.assert_allclose(values, np.logaddexp(0.0, X.astype("float64")), rtol=1e-6)
    sigmoid = np.exp(-np.logaddexp(0.0, -X.astype("float64")))
    np.testing.assert_allclose(_gradient(utils.softplus, X), sigmoid, rtol=1e-6, atol=1e-30)
    # The upstream gradient multiplies it (here 3 and the square's 2 x).
    np.testing.assert_allclose(_gradient(lambda x: 3.0 * utils.softplus(x), X), 3 * sigmoid, rtol=1e-6)
    squared = _gradient(lambda x: utils.softplus(x) ** 2, X[1:-1])
    np.testing.assert_allclose(squared, 2 * np.logaddexp(0.0, X[1:-1]) * sigmoid[1:-1], rtol=1e-5)
