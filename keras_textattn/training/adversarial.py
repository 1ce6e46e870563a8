"""Adversarial training on the word embeddings (TensorFlow backend).

Miyato, Dai and Goodfellow, "Adversarial Training Methods for Semi-Supervised Text
Classification" (ICLR 2017): each step also trains on its examples with the embedded
tokens moved a small distance in the direction that raises the loss fastest,

    g = d loss / d s,    r_adv = epsilon * ||s|| * g / ||g||,    minimise loss(s) + loss(s + r_adv)

where `s` is one example's embedded tokens (`embed_tokens`' output: the token vectors plus
their bigrams'), norms are over the example's real tokens, and `r_adv` is a constant of
the step (no gradient flows through it). Our choice: Miyato et al. normalise the
embeddings and give epsilon as an absolute length; our models' embeddings are not
normalised (a model could grow them until a fixed length means nothing), so epsilon is
relative to the norm of the example's own embeddings. Dropout draws other masks in the
two passes. It costs a second forward and a second backward pass through the layers
after the embeddings (the lookup is shared, and one backward pass gives both `g` and the
clean loss's gradients; `benchmarks/adversarial_cost.py` measures the cost per model).
Small epsilons (a few hundredths) are the useful range; large ones can keep a model at
chance (the docs' "What we tried" has the measurements).
"""

import keras
import tensorflow as tf

from keras_textattn.vocabulary import PAD_ID

# The layer whose output is the embedded tokens, in every builder of keras_textattn.models
# (`embed_tokens`): the sum with the bigrams' vectors when there are bigrams, else the lookup.
EMBEDDED_TOKENS = ("add_bigram_embedding", "embedding")


def _split_at_the_embeddings(model):
    """Two functional models on `model`'s layers and weights: ids -> embedded tokens, and
    (ids, embedded tokens) -> probabilities (it still reads the ids, for the padding masks).

    They are built on a twin of `model`'s graph (`clone_model` reusing every layer): a model
    whose inputs include an intermediate tensor rewrites the history of the graph's input
    tensors, after which Keras can no longer save the model that owns them.
    """
    names = {layer.name for layer in model.layers}
    name = next((name for name in EMBEDDED_TOKENS if name in names), None)
    if name is None:
        raise ValueError(
            f"adversarial training perturbs the output of a layer named {' or '.join(EMBEDDED_TOKENS)} "
            f"(the token embedding of keras_textattn's builders); {model.name} has none"
        )
    embedded = []

    def call(layer, *args, **kwargs):
        outputs = layer(*args, **kwargs)
        if layer.name == name:
            embedded.append(outputs)
        return outputs

    twin = keras.models.clone_model(model, clone_function=lambda layer: layer, call_function=call)
    return keras.Model(twin.inputs, embedded[0]), keras.Model([*twin.inputs, embedded[0]], twin.output)


def check_epsilon(epsilon):
    """`epsilon` as a float in (0, 1]; a `ValueError` saying what was given otherwise."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 < epsilon <= 1:
        raise ValueError(
            f"adversarial epsilon must be a number in (0, 1] (a length relative to the embeddings'); got {epsilon!r}"
        )
    return float(epsilon)


def use_adversarial_training(model, epsilon):
    """Make `model.fit` train `model` adversarially (the module docstring), from now on.

    `model`: a compiled or uncompiled functional classifier of `keras_textattn.models`
    (its saved form does not change: only its `train_step` does); `epsilon`: the
    perturbation's length relative to each example's embeddings, in (0, 1]. The inputs'
    first tensor must be the token ids (padding `PAD_ID`), as the builders make them.
    """
    gradients_of = adversarial_gradients(model, epsilon)

    def train_step(data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        inputs = [x[tensor.name] for tensor in model.inputs] if isinstance(x, dict) else list(tf.nest.flatten(x))

        def loss_of(predictions):
            return model.compute_loss(x, y, predictions, sample_weight, training=True)

        loss, y_pred, gradients = gradients_of(inputs, loss_of)
        model.optimizer.apply_gradients(zip(gradients, model.trainable_weights))
        # As Keras's own train_step: the loss logged is the clean examples' (times the replicas,
        # which Keras's loss divides by under a strategy).
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        model._loss_tracker.update_state(loss * replicas, sample_weight=tf.shape(inputs[0])[0])
        return model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    model.train_step = train_step
    model.train_function = None  # made again, with this step, by the next fit
    return model


def adversarial_gradients(model, epsilon):
    """`(inputs, loss_of) -> (loss, predictions, gradients)` for a training step of `model` (as
    `use_adversarial_training`'s; also the multi-worker loop's): `inputs` the model's input
    tensors in order, `loss_of(predictions)` the loss to minimise (scalar); returns the clean
    examples' loss and predictions, and the gradients of loss(s) + loss(s + r_adv) for
    `model.trainable_weights`, of the loss scaled as the optimizer scales it (mixed_float16)."""
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            f"adversarial training takes its gradients with tf.GradientTape, so it needs the "
            f"TensorFlow backend; Keras is using {keras.backend.backend()!r}"
        )
    epsilon = check_epsilon(epsilon)
    embed, classify = _split_at_the_embeddings(model)

    def gradients_of(inputs, loss_of):
        weights = model.trainable_weights
        with tf.GradientTape(persistent=True) as tape:
            vectors = embed(inputs if len(inputs) > 1 else inputs[0], training=True)
            predictions = classify([*inputs, vectors], training=True)
            loss = loss_of(predictions)
            scaled = model.optimizer.scale_loss(loss)  # under mixed_float16 the unscaled gradient can underflow
            with tape.stop_recording():
                # One backward pass gives both g and the clean loss's gradients of the weights.
                gradient, *gradients = tape.gradient(scaled, [vectors, *weights])
                perturbation = _adversarial_direction(gradient, vectors, inputs[0], epsilon)
            scaled = model.optimizer.scale_loss(loss_of(classify([*inputs, vectors + perturbation], training=True)))
        # The second backward pass goes through the perturbed pass only (and the shared lookup).
        gradients = list(map(_add, gradients, tape.gradient(scaled, weights)))
        del tape
        return loss, predictions, gradients

    return gradients_of


def _add(gradient, other):
    """The sum of two gradients of one weight, either of which may be None (not reached) or
    `tf.IndexedSlices` (an embedding's rows): slices are concatenated, as TensorFlow sums the
    gradients of a weight used twice, so the optimizer still makes a sparse update."""
    if gradient is None or other is None:
        return other if gradient is None else gradient
    if isinstance(gradient, tf.IndexedSlices) and isinstance(other, tf.IndexedSlices):
        return tf.IndexedSlices(
            tf.concat([gradient.values, other.values], 0),
            tf.concat([gradient.indices, other.indices], 0),
            gradient.dense_shape,
        )
    return tf.convert_to_tensor(gradient) + tf.convert_to_tensor(other)


def _adversarial_direction(gradient, vectors, token_ids, epsilon):
    """`epsilon * ||s|| * g / ||g||` for each example, over its real tokens (ids not `PAD_ID`),
    computed in float32 and returned in the dtype of `vectors`.

    `gradient`, `vectors`: `(rows, ..., dim)`, where the rows are the examples or, in a
    hierarchical model, the examples' sentences in order; `token_ids`: `(batch, ...)`.
    A gradient of zero (every token padding) gives no perturbation. The tokens per example are
    counted, not left to `reshape` (-1): a batch of no rows, which a multi-worker run's worker
    gets once its part of the data has run out, gives it nothing to count from.
    """
    batch, tokens = tf.shape(token_ids)[0], tf.reduce_prod(tf.shape(token_ids)[1:])
    real = tf.reshape(tf.cast(tf.not_equal(token_ids, PAD_ID), tf.float32), (batch, tokens, 1))
    by_example = (batch, tokens, tf.shape(vectors)[-1])
    gradient = tf.reshape(tf.cast(gradient, tf.float32), by_example) * real
    length = tf.norm(tf.reshape(tf.cast(vectors, tf.float32), by_example) * real, axis=(1, 2), keepdims=True)
    direction = tf.math.divide_no_nan(gradient, tf.norm(gradient, axis=(1, 2), keepdims=True))
    perturbation = tf.reshape(epsilon * length * direction, tf.shape(vectors))
    return tf.stop_gradient(tf.cast(perturbation, vectors.dtype))
