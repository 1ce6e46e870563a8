"""Adversarial training on the embedded tokens (`keras_textattn.training.adversarial`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_textattn.models import build_model
from keras_textattn.run_folder import load_run
from keras_textattn.training import compile_classifier
from keras_textattn.training import train
from keras_textattn.training import use_adversarial_training
from keras_textattn.training.adversarial import _adversarial_direction
from tests.small_models import SMALL


def expected_perturbation(gradient, vectors, ids, epsilon):
    """NumPy: per example, epsilon * ||s|| * g / ||g|| over its real tokens; zero elsewhere."""
    batch, dim = ids.shape[0], vectors.shape[-1]
    real = (ids.reshape(batch, -1) != 0)[..., None]
    g, s = gradient.reshape(batch, -1, dim) * real, vectors.reshape(batch, -1, dim) * real
    out = np.zeros_like(g)
    for b in range(batch):
        if np.linalg.norm(g[b]) > 0:
            out[b] = epsilon * np.linalg.norm(s[b]) * g[b] / np.linalg.norm(g[b])
    return out.reshape(vectors.shape)


@pytest.mark.parametrize("hierarchical", [False, True])
def test_the_perturbation_is_epsilon_times_each_examples_norm_along_its_gradient(hierarchical):
    """Padded tokens get none and count in no norm; an example of padding only gets none (not
    NaN); hierarchical vectors come a sentence a row, `(batch * sentences, words, dim)`."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 9, (3, 2, 5) if hierarchical else (3, 10))
    ids.reshape(3, -1)[0, 6:] = 0
    ids.reshape(3, -1)[2] = 0
    shape = (6, 5, 4) if hierarchical else (3, 10, 4)
    gradient, vectors = rng.normal(size=shape).astype("float32"), rng.normal(size=shape).astype("float32")
    got = _adversarial_direction(tf.constant(gradient), tf.constant(vectors), tf.constant(ids), 0.1).numpy()
    expected = expected_perturbation(gradient, vectors, ids, 0.1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
    assert np.all(got.reshape(3, -1, 4)[0, 6:] == 0) and np.all(got.reshape(3, -1, 4)[2] == 0)
    assert np.linalg.norm(got.reshape(3, -1)[1]) > 0
    # A batch of no rows (a multi-worker run's worker whose part has run out) gets none: the tokens
    # per example were left to reshape's -1, which no rows cannot tell.
    empty = _adversarial_direction(
        tf.zeros((0, *shape[1:])), tf.zeros((0, *shape[1:])), tf.zeros((0, *ids.shape[1:]), tf.int32), 0.1
    )
    assert empty.shape == (0, *shape[1:])


def averaging_classifier():
    """softmax(mean of the embedded tokens @ W + b): simple enough for a NumPy reference."""
    ids = keras.Input((6,), dtype="int32", name="token_ids")
    vectors = keras.layers.Embedding(12, 4, name="embedding")(ids)
    pooled = keras.layers.GlobalAveragePooling1D()(vectors)
    return keras.Model(ids, keras.layers.Dense(2, activation="softmax", name="logits")(pooled))


def numpy_adversarial_step(table, kernel, bias, ids, labels, epsilon, rate):
    """One SGD step on loss(s) + loss(s + r_adv) of `averaging_classifier`, from the equations."""
    batch, length = ids.shape
    onehot = np.eye(2)[labels]

    def forward(s):
        logits = s.mean(axis=1) @ kernel + bias
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        return s.mean(axis=1), p / p.sum(axis=1, keepdims=True)

    s = table[ids]
    pooled, p = forward(s)
    d_s = np.repeat(((p - onehot) @ kernel.T / (length * batch))[:, None, :], length, axis=1)  # d mean loss / d s
    r = expected_perturbation(d_s, s, ids, epsilon)
    pooled_adv, p_adv = forward(s + r)
    d_kernel = (pooled.T @ (p - onehot) + pooled_adv.T @ (p_adv - onehot)) / batch
    d_bias = ((p - onehot) + (p_adv - onehot)).sum(axis=0) / batch
    d_table = np.zeros_like(table)
    per_token = ((p - onehot) + (p_adv - onehot)) @ kernel.T / (length * batch)
    for b in range(batch):
        for t in range(length):
            d_table[ids[b, t]] += per_token[b]
    return table - rate * d_table, kernel - rate * d_kernel, bias - rate * d_bias


@pytest.mark.parametrize("trainer", ["fit", "multi_worker_loop"])
def test_one_step_matches_the_equations_in_numpy(trainer):
    """After one SGD step, of `fit` or of the multi-worker loop (`--distribute multi-worker` / `ray`,
    which refused adversarial training before), the weights are those of a NumPy step on
    loss(s) + loss(s + r_adv)."""
    from keras_textattn.datasets.splits import TextClassificationData
    from keras_textattn.training.multi_worker import fit_multi_worker as _fit_multi_worker

    rng = np.random.default_rng(1)
    ids, labels = rng.integers(1, 12, (4, 6)), np.array([0, 1, 1, 0])
    keras.utils.set_random_seed(0)
    model = averaging_classifier()
    start = [w.copy() for w in model.get_weights()]
    model.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    if trainer == "fit":
        use_adversarial_training(model, 0.3)
        model.fit(ids, labels, batch_size=4, epochs=1, shuffle=False, verbose=0)
    else:
        rows = tf.data.Dataset.from_tensor_slices((ids.astype("int32"), labels.astype("int32")))
        _fit_multi_worker(
            tf.distribute.get_strategy(),
            model,
            TextClassificationData(splits={"train": rows}, label_names=["a", "b"]),
            lambda part, size: part.batch(size),
            1,
            4,
            1,
            adversarial=0.3,
        )
    expected = numpy_adversarial_step(*start, ids, labels, epsilon=0.3, rate=0.5)
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    # Not the plain step, which it would be if the perturbed pass were lost.
    plain = numpy_adversarial_step(*start, ids, labels, epsilon=1e-9, rate=0.25)
    assert np.abs(model.get_weights()[1] - plain[1]).max() > 1e-4


def test_a_model_without_the_builders_embedding_or_a_bad_epsilon_is_refused():
    ids = keras.Input((6,), dtype="int32")
    pooled = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(12, 4, name="lookup")(ids))
    other = keras.Model(ids, keras.layers.Dense(2, activation="softmax")(pooled))
    with pytest.raises(ValueError, match="a layer named add_bigram_embedding or embedding .* has none"):
        use_adversarial_training(other, 0.05)
    with pytest.raises(ValueError, match=r"in \(0, 1\] .*got -0.1"):
        use_adversarial_training(averaging_classifier(), -0.1)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_builder_trains_adversarially_and_keeps_its_saved_form(name, tmp_path):
    """Every model (HCAN hierarchical, its embeddings a sentence a row; the others with bigrams)
    trains finitely (HCAN and scalable attention under mixed_float16, whose gradients the step
    takes of the scaled loss); the model saved after it loads without custom objects and
    predicts as the trained one."""
    keras.utils.set_random_seed(0)
    hierarchical = name == "hcan"
    sizes = dict(max_sentences=2, sequence_length=5) if hierarchical else dict(sequence_length=10, bigram_buckets=7)
    policy = "mixed_float16" if name in ("hcan", "scalable_attention") else "float32"
    model = build_model(name, 2, vocabulary_size=30, dtype_policy=policy, **SMALL[name], **sizes)
    ids = np.random.default_rng(0).integers(1, 30, (8, 2, 5) if hierarchical else (8, 10))
    ids[:, -1] = 0  # padding
    inputs = ids if hierarchical else (ids, ids % 8)
    compile_classifier(model, keras.optimizers.Adam(1e-2))  # as train() compiles
    use_adversarial_training(model, 0.05)
    history = model.fit(inputs, np.arange(8) % 2, batch_size=4, epochs=1, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(loaded.predict(inputs, verbose=0), model.predict(inputs, verbose=0), atol=1e-6)
    assert int(loaded.optimizer.iterations) == int(model.optimizer.iterations) > 0  # its state loaded too


def test_train_records_it_and_refuses_a_bad_epsilon(shared_data, tmp_path):
    """`train(adversarial=...)` on real data: recorded in metrics.json, the weights differ from a
    plain run of the same seed; an epsilon outside (0, 1] is a one-line `RunError`."""
    from keras_textattn.run_folder import RunError

    data = str(shared_data / "sst2" / "dev.csv.gz")
    options = dict(model_kwargs=SMALL["scalable_attention"], sequence_length=24, max_tokens=2000, epochs=1, verbose=0)
    metrics = train("scalable_attention", data, str(tmp_path / "adversarial"), adversarial=0.02, **options)
    train("scalable_attention", data, str(tmp_path / "plain"), **options)
    assert metrics["adversarial"] == 0.02 and np.isfinite(metrics["history"]["loss"]).all()
    adversarial, plain = (
        load_run(tmp_path / run)[0].get_layer("embedding").get_weights()[0] for run in ("adversarial", "plain")
    )
    assert np.abs(adversarial - plain).max() > 1e-5
    with pytest.raises(RunError, match=r"adversarial epsilon must be a number in \(0, 1\].*got 2 \(--adversarial\)"):
        train("scalable_attention", data, str(tmp_path / "bad"), adversarial=2, **options)
