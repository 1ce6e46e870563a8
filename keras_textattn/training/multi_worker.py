"""The multi-worker training loop (Keras's `fit` fails under MultiWorkerMirroredStrategy)."""

import contextlib
import functools
import math
import os
import shutil
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf

from keras_textattn.datasets import inference_batch_size
from keras_textattn.metrics import all_labels_right
from keras_textattn.training.adversarial import adversarial_gradients
from keras_textattn.training.backup import BestEpoch
from keras_textattn.training.backup import RunBackup
from keras_textattn.training.backup import copy_from_chief
from keras_textattn.training.backup import restore
from keras_textattn.training.callbacks import EpochRateTensorBoard
from keras_textattn.training.callbacks import check_converging
from keras_textattn.training.model_setup import classifier_loss
from keras_textattn.training.model_setup import compile_classifier
from keras_textattn.training.model_setup import embedding_updates
from keras_textattn.training.model_setup import make_optimizer
from keras_textattn.training.run_state import keep_history_before
from keras_textattn.training.run_state import read_history
from keras_textattn.training.schedules import schedule_callbacks


def train_multi_worker(run, classifier, rows, batches_of, class_weights, label_weights, rebuild):
    """The multi-worker part of `train()`: `(classifier, history, best epoch's callback or None, the
    epoch it resumed from)`, the classifier rebuilt outside the strategy (`rebuild()`) with the
    trained weights and optimizer state, for the evaluation and model.keras.

    Every worker keeps the run's state: the chief in the run folder, the others in a temporary
    folder, into which the chief's backup and history (a resumed run's) are copied first. So all
    resume alike from the chief's disk alone: the same epoch, weights, and plateau's and early
    stopping's state (which then decide alike, on the same validation figures), and each
    restores the best epoch's weights at the end.
    """
    config, chief = run.config, run.chief
    history_path, logs = os.path.join(run.output, "history.csv"), os.path.join(run.output, "logs")
    backup = os.path.join(run.output, "backup")
    if chief and not run.resume:  # what an earlier try, which started again, left
        for folder in (logs, backup):
            shutil.rmtree(folder, ignore_errors=True)
    with contextlib.nullcontext(backup) if chief else tempfile.TemporaryDirectory() as state:
        kept = (
            sorted(os.path.join(backup, name) for name in os.listdir(backup) if not name.startswith("."))
            if chief and os.path.isdir(backup)
            else []
        )
        copy_from_chief(run.strategy, chief, [*kept, history_path], state)
        worker_history = history_path if chief else os.path.join(state, os.path.basename(history_path))
        best = (
            BestEpoch(state, config.early_stopping, config.early_stopping_monitor or "loss")
            if config.early_stopping
            else None
        )
        resumed_from_epoch = restore(classifier, state)
        keep_history_before(worker_history, resumed_from_epoch)
        if resumed_from_epoch < config.epochs and not (best and best.stopped):
            callbacks = [
                *schedule_callbacks(config.lr_schedule, config.learning_rate, config.epochs, state),
                # history.csv (the other workers' copy in `state`) and the chief's TensorBoard logs,
                # epoch by epoch as `fit` writes them.
                keras.callbacks.CSVLogger(worker_history, append=True),
                *([EpochRateTensorBoard(logs)] if chief else []),
                *([best] if best else []),  # before the checkpoint: a resumed run knows the best epoch
                *([RunBackup(backup, every=config.checkpoint_every)] if chief else []),
            ]
            fit_multi_worker(
                run.strategy,
                classifier,
                run.dataset,
                functools.partial(batches_of, shuffle=config.shuffle, sample_windows=config.sample_windows),
                config.epochs,
                config.batch_size,
                math.ceil(rows["train"] / config.batch_size),
                callbacks,
                verbose=config.verbose and chief,
                validation_batches_of=batches_of,
                validation_batch_size=inference_batch_size(config.batch_size),
                class_weights=class_weights,
                adversarial=config.adversarial,
                label_smoothing=config.label_smoothing,
                initial_epoch=resumed_from_epoch,
                multi_label=run.dataset.multi_label,
                label_weights=label_weights,
            )
        history = read_history(worker_history)
        if best:
            best.set_model(classifier)
            best.restore_best()
    # Evaluate locally on each worker (Keras's evaluate cannot reduce across workers either):
    # the trained weights in a model built outside the strategy.
    trained, classifier = classifier, rebuild()
    classifier.set_weights(trained.get_weights())
    # The run's optimizer and its trained state, so that model.keras trains on as a one-device run's does.
    compile_classifier(
        classifier,
        make_optimizer(config, embedding_updates(config, classifier)),
        config.label_smoothing,
        multi_label=run.dataset.multi_label,
        label_weights=label_weights,
    )
    classifier.optimizer.build(classifier.trainable_variables)
    for variable, value in zip(classifier.optimizer.variables, trained.optimizer.variables, strict=True):
        variable.assign(value)
    return classifier, history, best, resumed_from_epoch


def fit_multi_worker(
    strategy,
    model,
    dataset,
    batches_of,
    epochs,
    global_batch_size,
    batches,
    callbacks=(),
    verbose=False,
    validation_batches_of=None,
    validation_batch_size=None,
    class_weights=None,
    adversarial=None,
    label_smoothing=None,
    initial_epoch=0,
    multi_label=False,
    label_weights=None,
):
    """Data-parallel training across workers with a plain distributed loop.

    Keras 3's `fit` fails under MultiWorkerMirroredStrategy (it reduces a data batch
    and scalar logs across workers; keras-team/keras#20585), so this loop runs the
    same forward pass, loss and optimizer through `strategy.run`. Each worker reads its
    own part of the training rows (`TextClassificationData.worker_split`: its own shards
    when there are at least as many as workers, else every n-th row), batched by
    `batches_of(rows, per-worker batch size)`; a worker whose part has run out gets empty
    batches until every part has (TensorFlow's distributed iterator). The loss of each replica
    is averaged over the global batch (`tf.nn.compute_average_loss`), so the summed gradients
    equal single-device gradients. `class_weights` (`{label id: weight}`, as `fit`'s
    `class_weight`) weigh each row's loss, as `fit` does (not the accuracy). `adversarial`: an
    epsilon, to train as `use_adversarial_training` makes `fit` train. `label_smoothing`: as
    `classifier_loss`'s, to train with the loss `compile_classifier` gives `fit`; so are
    `multi_label` (0/1 rows of labels: the binary cross-entropy, and the subset accuracy) and
    `label_weights` (each label's positive and negative weights, `class_weights_of`).
    `batches`: the global batches of an epoch. `initial_epoch`: the first epoch to train (a
    resumed run's, as `fit`'s).

    With `validation_batches_of` (as `batches_of`, unshuffled; `validation_batch_size` the global
    batch), each epoch ends with the validation split's loss and accuracy, `fit`'s `val_loss`
    and `val_accuracy`: each worker scores its part of it and the sums are added up across
    workers, so every worker gets the same figures and callbacks that act on them (early
    stopping, the plateau) decide alike on all of them.

    `callbacks` (Keras callbacks, the run's schedule among them: `schedules.schedule_callbacks`)
    get the beginning and end of each epoch and training batch, as in `fit` (each epoch's end with
    its history row as the logs: a checkpoint's callback, `RunBackup`, saves there and every few
    batches); one that sets `model.stop_training` ends training there. `verbose` prints that row,
    a line an epoch.
    """

    def distributed(split, batches_of_split, global_size):
        def worker_batches(context):
            rows, description = dataset.worker_split(split, context.input_pipeline_id, context.num_input_pipelines)
            if split == "train":
                print(description, flush=True)  # also with verbose=0 (--quiet: no progress bars): one line per worker
            return batches_of_split(rows, context.get_per_replica_batch_size(global_size))

        return strategy.distribute_datasets_from_function(worker_batches)

    train_batches = distributed("train", batches_of, global_batch_size)
    validation_batches = (
        distributed("validation", validation_batches_of, validation_batch_size) if validation_batches_of else None
    )
    replica_step, replica_scores = _replica_functions(
        model,
        dataset.num_classes,
        class_weights,
        classifier_loss(label_smoothing, reduction=None, multi_label=multi_label, label_weights=label_weights),
        adversarial,
        global_batch_size,
        multi_label,
    )
    step = _summed(strategy, replica_step, train_batches)
    scores = _summed(strategy, replica_scores, validation_batches) if validation_batches is not None else None
    history = keras.callbacks.History()  # last: each epoch's logs as the callbacks leave them
    callbacks = keras.callbacks.CallbackList([*callbacks, history], model=model, epochs=epochs, steps=batches)
    model.stop_training = False

    def optimizer_rate():
        return float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))

    learning_rate = optimizer_rate()  # the run's, for a message
    callbacks.on_train_begin()
    for epoch in range(initial_epoch, epochs):
        callbacks.on_epoch_begin(epoch)
        start, losses, right, rows = time.perf_counter(), [], 0.0, 0.0
        for batch, (ids, labels) in enumerate(train_batches):
            callbacks.on_train_batch_begin(batch)
            loss, batch_right, batch_rows = step(ids, labels)
            callbacks.on_train_batch_end(batch)
            losses.append(float(loss))
            right, rows = right + float(batch_right), rows + float(batch_rows)
        # The rate logged is the optimizer's (constant, the plateau's); a schedule's callback logs its own.
        logs = {
            "loss": float(np.mean(losses)),
            "accuracy": right / rows if rows else 0.0,
            "learning_rate": optimizer_rate(),
        }
        check_converging(model, logs["loss"], epoch, learning_rate)
        if validation_batches is not None:
            totals = np.zeros(3)
            for ids, labels in validation_batches:
                totals += [float(value) for value in scores(ids, labels)]
            logs.update(val_loss=totals[0] / totals[2], val_accuracy=totals[1] / totals[2])
        logs["seconds"] = time.perf_counter() - start
        callbacks.on_epoch_end(epoch, logs)
        if verbose:
            print(
                f"Epoch {epoch + 1}/{epochs} - "
                + " - ".join(f"{name}: {history.history[name][-1]:.4g}" for name in logs),
                flush=True,
            )
        if model.stop_training:
            break
    callbacks.on_train_end()
    return {
        "epoch": [float(epoch) for epoch in history.epoch],
        **{name: [float(value) for value in values] for name, values in history.history.items()},
    }


def _replica_functions(
    model, num_classes, class_weights, loss_function, adversarial, global_batch_size, multi_label=False
):
    """The training step and the scoring of one replica's batch, as `fit` and `evaluate` compute
    them with `loss_function` (a row's loss, unreduced)."""
    weights_of_classes = tf.constant(
        [(class_weights or {}).get(label, 1.0) for label in range(num_classes)], tf.float32
    )

    def correct(labels, probabilities):
        if multi_label:
            return tf.reduce_sum(all_labels_right(labels, probabilities))
        return tf.reduce_sum(
            tf.cast(tf.equal(tf.argmax(probabilities, -1, output_type=tf.int32), tf.cast(labels, tf.int32)), tf.float32)
        )

    def row_weights(labels):
        if multi_label:  # its weights are the loss's, label by label
            return tf.ones(tf.shape(labels)[:1], tf.float32)
        return tf.gather(weights_of_classes, tf.cast(labels, tf.int32))

    adversarial_gradients_of = adversarial_gradients(model, adversarial) if adversarial else None

    def replica_step(ids, labels):
        weights = row_weights(labels)

        def loss_of(probabilities):
            loss = tf.nn.compute_average_loss(
                weights * loss_function(labels, probabilities), global_batch_size=global_batch_size
            )
            if model.losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
            return loss

        if adversarial_gradients_of:
            loss, probabilities, gradients = adversarial_gradients_of(list(tf.nest.flatten(ids)), loss_of)
        else:
            with tf.GradientTape() as tape:
                probabilities = model(ids, training=True)
                loss = loss_of(probabilities)
                # Under mixed_float16 the optimizer is Keras's LossScaleOptimizer: it unscales the
                # gradients it applies, so they must be of the scaled loss (as `fit` does).
                scaled_loss = model.optimizer.scale_loss(loss)
            gradients = tape.gradient(scaled_loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss, correct(labels, probabilities), tf.cast(tf.shape(labels)[0], tf.float32)

    def replica_scores(ids, labels):
        """The batch's summed loss (with the model's own losses per row, as `evaluate` adds them),
        right answers and rows."""
        probabilities = model(ids, training=False)
        rows = tf.cast(tf.shape(labels)[0], tf.float32)
        loss = tf.reduce_sum(loss_function(labels, probabilities))
        if model.losses:
            loss += tf.cast(tf.add_n(model.losses), tf.float32) * rows
        return loss, correct(labels, probabilities), rows

    return replica_step, replica_scores


def _summed(strategy, replica_function, batches):
    """A traced step that runs `replica_function` on every replica and adds up its values.
    Traced once, for the batches' own shapes: a worker whose part has run out gets a batch of
    a known 0 rows, and a step traced for it apart left some of HCAN's and CSPAN's gradients
    None, so that worker sent fewer to the gradients' all-reduce than the others and the run
    failed ("Shape mismatch in the collective instance")."""

    @tf.function(input_signature=list(batches.element_spec))
    def run(ids, labels):
        return [
            strategy.reduce("SUM", value, axis=None) for value in strategy.run(replica_function, args=(ids, labels))
        ]

    return run
