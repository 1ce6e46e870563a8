"""`LazyAdam` and `LazySGD` against NumPy references of their equations, on the rows a sparse
gradient touches and those it does not; dense gradients as Keras's own optimizers.

CI runs this module under KERAS_BACKEND=tensorflow, jax and torch: only TensorFlow gives sparse
gradients, so elsewhere the lazy optimizers must be Keras's, every row updated.
"""

import doctest

import keras
import numpy as np
import pytest

import keras_textattn  # noqa: F401  (registers the optimizers)
from keras_textattn.embedding import RowReadEmbedding
from keras_textattn.optimizers import LazyAdam
from keras_textattn.optimizers import LazySGD

to_numpy = keras.ops.convert_to_numpy
ON_TENSORFLOW = keras.backend.backend() == "tensorflow"
ROWS, DIM = 6, 3
# Three steps' rows (with a repeat, whose gradients add up) and their gradients.
STEPS = [[0, 2, 2], [2, 4, 0], [4, 4, 4]]
GRADIENTS = [np.random.default_rng(step).normal(size=(3, DIM)).astype("float32") for step in range(3)]


def _summed(rows, values):
    """The dense gradient of `values` looked up at `rows` (repeats add up)."""
    dense = np.zeros((ROWS, DIM), "float32")
    np.add.at(dense, rows, values)
    return dense


def _gradient(rows, values, sparse=ON_TENSORFLOW):
    """On TensorFlow, the sparse gradient Keras's `Embedding` gives; elsewhere the dense one."""
    if sparse:
        import tensorflow as tf

        return tf.IndexedSlices(tf.constant(values), tf.constant(rows), dense_shape=tf.constant([ROWS, DIM]))
    return keras.ops.convert_to_tensor(_summed(rows, values))


def _adam_reference(initial, lazy, amsgrad=False, learning_rate=0.1, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """Keras's Adam, step by step; with `lazy`, only the rows a step used change (weights and moments)."""
    weights, m, v = initial.copy(), np.zeros_like(initial), np.zeros_like(initial)
    v_hat = np.zeros_like(initial)
    for step, (rows, values) in enumerate(zip(STEPS, GRADIENTS), start=1):
        gradient = _summed(rows, values)
        used = np.isin(np.arange(ROWS), rows) if lazy else np.ones(ROWS, bool)
        m[used] = beta_1 * m[used] + (1 - beta_1) * gradient[used]
        v[used] = beta_2 * v[used] + (1 - beta_2) * gradient[used] ** 2
        v_hat[used] = np.maximum(v_hat[used], v[used])
        alpha = learning_rate * np.sqrt(1 - beta_2**step) / (1 - beta_1**step)
        weights[used] -= alpha * m[used] / (np.sqrt((v_hat if amsgrad else v)[used]) + epsilon)
    return weights, m, v


def _sgd_reference(initial, lazy, learning_rate=0.1, momentum=0.0, nesterov=False):
    """Keras's SGD, step by step; with `lazy`, only the rows a step used change (weights and momentum)."""
    weights, velocity = initial.copy(), np.zeros_like(initial)
    for rows, values in zip(STEPS, GRADIENTS):
        gradient = _summed(rows, values)
        used = np.isin(np.arange(ROWS), rows) if lazy else np.ones(ROWS, bool)
        if momentum == 0:
            weights[used] -= learning_rate * gradient[used]
            continue
        velocity[used] = momentum * velocity[used] - learning_rate * gradient[used]
        step = momentum * velocity[used] - learning_rate * gradient[used] if nesterov else velocity[used]
        weights[used] += step
    return weights, velocity


def _trained(optimizer, initial, sparse=ON_TENSORFLOW):
    table = keras.Variable(initial, name="table")
    optimizer.build([table])
    for rows, values in zip(STEPS, GRADIENTS):
        optimizer.apply([_gradient(rows, values, sparse)], [table])
    return to_numpy(table), [to_numpy(v) for v in optimizer.variables[2:]]


INITIAL = np.random.default_rng(7).normal(size=(ROWS, DIM)).astype("float32")


@pytest.mark.parametrize("amsgrad", [False, True])
def test_lazy_adam_updates_only_the_rows_a_step_used(amsgrad):
    weights, slots = _trained(LazyAdam(learning_rate=0.1, amsgrad=amsgrad), INITIAL)
    expected, m, v = _adam_reference(INITIAL, lazy=ON_TENSORFLOW, amsgrad=amsgrad)
    np.testing.assert_allclose(slots[0], m, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(slots[1], v, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-6)
    untouched = [row for row in range(ROWS) if not any(row in rows for rows in STEPS)]
    assert untouched == [1, 3, 5]
    if ON_TENSORFLOW:
        np.testing.assert_array_equal(weights[untouched], INITIAL[untouched])
        np.testing.assert_array_equal(slots[0][untouched], 0.0)
    else:  # dense gradients: Keras's Adam moves an untouched row once its moments are nonzero
        assert not np.array_equal(weights[[0, 2, 4]], INITIAL[[0, 2, 4]])


def test_lazy_adam_differs_from_adam_only_where_adam_moves_unused_rows():
    """Rows 0 and 2 are unused in the third step: Keras's Adam moves them by their moments, the lazy
    one does not. (Keras's Adam is given the dense gradient: given the sparse one, it squares a
    repeated row's gradients before adding them up.)"""
    lazy, _ = _trained(LazyAdam(learning_rate=0.1), INITIAL)
    dense, _ = _trained(keras.optimizers.Adam(learning_rate=0.1), INITIAL, sparse=False)
    np.testing.assert_allclose(dense, _adam_reference(INITIAL, lazy=False)[0], rtol=1e-5, atol=1e-6)
    if ON_TENSORFLOW:
        assert np.abs(lazy[[0, 2]] - dense[[0, 2]]).min() > 1e-4
        np.testing.assert_allclose(lazy[4], dense[4], rtol=1e-5)  # unused only in the first step, when both leave it
    else:
        np.testing.assert_allclose(lazy, dense, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_lazy_sgd_updates_only_the_rows_a_step_used(momentum, nesterov):
    weights, slots = _trained(LazySGD(learning_rate=0.1, momentum=momentum, nesterov=nesterov), INITIAL)
    expected, velocity = _sgd_reference(INITIAL, lazy=ON_TENSORFLOW, momentum=momentum, nesterov=nesterov)
    np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-6)
    if momentum:
        np.testing.assert_allclose(slots[0], velocity, rtol=1e-5, atol=1e-7)


def test_dense_gradients_are_updated_as_keras_does():
    kernel = np.random.default_rng(3).normal(size=(4, 2)).astype("float32")
    gradients = [np.random.default_rng(10 + step).normal(size=(4, 2)).astype("float32") for step in range(3)]
    for lazy, keras_optimizer in (
        (LazyAdam(0.05, weight_decay=0.01), keras.optimizers.Adam(0.05, weight_decay=0.01)),
        (LazySGD(0.05, momentum=0.9), keras.optimizers.SGD(0.05, momentum=0.9)),
    ):
        results = []
        for optimizer in (lazy, keras_optimizer):
            variable = keras.Variable(kernel)
            optimizer.build([variable])
            for gradient in gradients:
                optimizer.apply([keras.ops.convert_to_tensor(gradient)], [variable])
            results.append(to_numpy(variable))
        np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.skipif(not ON_TENSORFLOW, reason="sparse gradients are TensorFlow's; the tests above run anywhere")
def test_a_model_trained_with_lazy_adam_keeps_unused_embedding_rows_and_saves(tmp_path):
    """At the model level: through `fit` and its compiled step, the embedding rows of ids that no
    text holds stay as initialised; the model saves and loads with its optimizer (registered)."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((5,), dtype="int32")
    embedded = keras.layers.Embedding(20, 4, name="embedding")(inputs)
    outputs = keras.layers.Dense(2, activation="softmax")(keras.layers.GlobalAveragePooling1D()(embedded))
    model = keras.Model(inputs, outputs)
    model.compile(LazyAdam(0.05), "sparse_categorical_crossentropy")
    initial = model.get_layer("embedding").get_weights()[0]
    ids = np.random.default_rng(0).integers(0, 10, (64, 5)).astype("int32")  # ids 10-19 never used
    labels = (ids[:, 0] > 4).astype("int32")
    history = model.fit(ids, labels, epochs=5, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    trained = model.get_layer("embedding").get_weights()[0]
    np.testing.assert_array_equal(trained[10:], initial[10:])
    assert np.abs(trained[:10] - initial[:10]).min() > 0
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert type(loaded.optimizer) is LazyAdam
    np.testing.assert_array_equal(loaded.predict(ids, verbose=0), model.predict(ids, verbose=0))


def _embedding_pair(**kwargs):
    """A `RowReadEmbedding` and a Keras `Embedding` with the same table."""
    ours, keras_own = RowReadEmbedding(20, 4, **kwargs), keras.layers.Embedding(20, 4, **kwargs)
    ours.build((None, 3))
    keras_own.build((None, 3))
    keras_own.set_weights(ours.get_weights())
    return ours, keras_own


def test_row_read_embedding_is_keras_embedding_also_after_rows_were_updated(tmp_path):
    ids = np.array([[1, 5, 0], [19, 5, 5]])
    ours, keras_own = _embedding_pair(mask_zero=True)
    np.testing.assert_array_equal(to_numpy(ours(ids)), to_numpy(keras_own(ids)))
    np.testing.assert_array_equal(to_numpy(ours.compute_mask(ids)), ids != 0)
    # A lazy optimizer writes rows in place: a read afterwards must see the new rows.
    for layer in (ours, keras_own):
        gradient = np.ones((2, 4), "float32")
        LazySGD(0.5).apply([_sparse_gradient(gradient, [5, 19], layer)], [layer.embeddings])
    np.testing.assert_array_equal(to_numpy(ours(ids)), to_numpy(keras_own(ids)))
    np.testing.assert_array_equal(to_numpy(ours(ids))[1, 0], to_numpy(keras_own.embeddings)[19])
    inputs = keras.Input((3,), dtype="int32")
    model = keras.Model(inputs, ours(inputs))
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras", safe_mode=True)
    assert type(loaded.layers[-1]) is RowReadEmbedding
    np.testing.assert_array_equal(to_numpy(loaded(ids)), to_numpy(model(ids)))


def _sparse_gradient(values, rows, layer):
    """The gradient TensorFlow gives a table read at `rows` (dense on other backends)."""
    if keras.backend.backend() != "tensorflow":
        dense = np.zeros(layer.embeddings.shape, "float32")
        np.add.at(dense, rows, values)
        return dense
    import tensorflow as tf

    return tf.IndexedSlices(tf.constant(values), tf.constant(rows), dense_shape=tf.constant(layer.embeddings.shape))


def test_row_read_embedding_computes_in_the_policy_and_keeps_a_float32_table():
    layer = RowReadEmbedding(20, 4, dtype="mixed_float16")
    outputs = layer(np.array([[1, 2]]))
    assert keras.backend.standardize_dtype(outputs.dtype) == "float16"
    assert layer.embeddings.dtype == "float32"


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="row reads and sparse gradients are TensorFlow's")
def test_row_read_embedding_gives_a_sparse_gradient_and_compiles_with_xla():
    import tensorflow as tf

    layer = RowReadEmbedding(20, 4)
    ids = tf.constant([[1, 5, 5]])
    layer.build(ids.shape)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(ids))
    gradient = tape.gradient(loss, layer.embeddings.value)
    assert isinstance(gradient, tf.IndexedSlices)
    np.testing.assert_array_equal(np.sort(gradient.indices.numpy()), [1, 5, 5])
    compiled = tf.function(lambda ids: layer(ids), jit_compile=True)
    np.testing.assert_array_equal(compiled(ids).numpy(), layer(ids).numpy())


def test_row_read_embedding_example_runs_as_written():
    (example,) = [test for test in doctest.DocTestFinder().find(RowReadEmbedding) if test.examples]
    assert len(example.examples) >= 6
    assert doctest.DocTestRunner().run(example).failed == 0
