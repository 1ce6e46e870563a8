"""`train()`: data to a finished run folder, resumable and distributable (TensorFlow backend).

A run folder holds:
    model.keras      the token-id classifier (`keras.models.load_model`, no custom_objects)
    encoder.keras    the fitted `TextEncoder` (its vocabulary is an asset of the file)
    vocabulary.txt   one token per line, line i is id i
    labels.json      class names, index = label id
    history.csv      loss and accuracy per epoch (appended across resumed runs)
    metrics.json     written last: a run folder with it is finished
    logs/            TensorBoard
    backup/          the BackupAndRestore state while the run is unfinished
"""

import json
import os
import shutil
import time

import keras
import numpy as np
import tensorflow as tf

from keras_textattn import _backend
from keras_textattn._files import write_atomically
from keras_textattn._files import write_text
from keras_textattn.datasets import LocalFile
from keras_textattn.datasets import load_dataset
from keras_textattn.datasets import make_batches
from keras_textattn.models import BUILDERS
from keras_textattn.models import build_model
from keras_textattn.text import TextEncoder

class RunError(ValueError):
    """A problem with the arguments of a run, reported as one line."""


def configure_cpu_devices(count):
    """Split the CPU into `count` logical devices (for MirroredStrategy without GPUs).

    Must run before TensorFlow initialises its devices, i.e. first in a process.
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)


def make_strategy(distribute):
    """None, "mirrored" (all visible GPUs, else all logical CPUs) or "multi-worker" (TF_CONFIG)."""
    if distribute in (None, "none"):
        return tf.distribute.get_strategy()
    if distribute == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]
        return tf.distribute.MirroredStrategy(devices)
    if distribute == "multi-worker":
        if not os.environ.get("TF_CONFIG"):
            raise RunError(
                "--distribute multi-worker needs TF_CONFIG (the cluster and this worker's task); "
                "see README, 'Training on several machines'"
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise RunError(f"unknown --distribute {distribute!r}; use none, mirrored or multi-worker")


def _is_chief(strategy):
    """The chief writes the run folder: task "chief", else worker 0 of a cluster without one."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


class _Timing(keras.callbacks.Callback):
    """Seconds per epoch and training examples per second."""

    def __init__(self, examples_per_epoch):
        super().__init__()
        self.examples_per_epoch = examples_per_epoch
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def data_source(data, test_data, text_column, label_column, header, label_offset):
    """`(source, splits, tfds_text_column)` for `load_dataset`."""
    if data is None:
        raise RunError("give --data: a TFDS name or a CSV/TSV file")
    if isinstance(data, LocalFile):
        data = {"train": data}
    if isinstance(data, dict):  # split name to LocalFile, from the Python API
        return data, tuple(data) + ("validation",), None
    is_file = os.sep in data or "." in os.path.basename(data) or os.path.exists(data)
    if not is_file:
        return data, ("train", "validation", "test"), text_column
    options = dict(header=header, label_offset=label_offset)
    if text_column is not None:
        options["text_column"] = text_column
    if label_column is not None:
        options["label_column"] = label_column
    source = {"train": LocalFile(data, **options)}
    if test_data:
        source["test"] = LocalFile(test_data, **options)
    return source, tuple(source) + ("validation",), None


def load_run_data(data, test_data=None, text_column=None, label_column=None, header=True, label_offset=0,
                  label_names=None, data_dir=None, validation_fraction=0.1, seed=0):
    """`(dataset, source)`: the splits for a run (train, a seeded validation carve, test
    if there is one), from the arguments of `train()`; bad data raises `RunError`."""
    source, splits, tfds_text_column = data_source(data, test_data, text_column, label_column, header, label_offset)
    try:
        dataset = load_dataset(source, splits, validation_fraction=validation_fraction, seed=seed, data_dir=data_dir,
                               text_column=tfds_text_column, label_names=label_names)
    except ValueError as error:
        raise RunError(str(error)) from None
    return dataset, source


def _run_state(output, overwrite):
    """"new", "resume" or an error for a finished run."""
    if os.path.exists(os.path.join(output, "metrics.json")):
        if not overwrite:
            raise RunError(f"{output} already holds a finished run; pass --overwrite to replace it or choose another --output")
        return "overwrite"
    if os.path.isdir(output) and os.listdir(output):
        return "overwrite" if overwrite else "resume"
    return "new"


def train(
    model="lama",
    data=None,
    output="runs/run",
    *,
    test_data=None,
    text_column=None,
    label_column=None,
    header=True,
    label_offset=0,
    label_names=None,
    data_dir=None,
    model_kwargs=None,
    max_tokens=20000,
    min_frequency=1,
    sequence_length=256,
    max_sentences=15,
    bigram_buckets=50000,
    epochs=3,
    batch_size=32,
    learning_rate=1e-3,
    validation_fraction=0.1,
    seed=0,
    shuffle=True,
    distribute=None,
    checkpoint_every=None,
    overwrite=False,
    verbose=1,
):
    """Train `model` on `data` and write a run folder at `output` (see the module docstring).

    Args:
        model: a name of `keras_textattn.models.BUILDERS`.
        data: a TFDS name, a local CSV/TSV file, or a dict of split name to
            `LocalFile` (for files in different formats); `test_data`: a local test
            file in the format of `data`.
        text_column: the text column(s) of local files, or the TFDS text feature(s).
        label_column, header, label_offset, label_names: for local files (see
            `LocalFile`); `data_dir`: for TFDS.
        model_kwargs: passed to the builder (e.g. `{"num_heads": 4}`).
        max_tokens, min_frequency, sequence_length: of the encoder; HCAN uses
            `sequence_length` words per sentence and `max_sentences`; the dual-axial
            model gets `bigram_buckets` hashed bigrams.
        epochs, batch_size (global), learning_rate, validation_fraction, seed.
        shuffle: shuffle the training rows each epoch (with `seed`). The shuffled
            order under a tf.distribute strategy differs from a single device's, so
            compare strategies with `shuffle=False`.
        distribute: None, "mirrored" or "multi-worker" (see `make_strategy`).
        checkpoint_every: also back up every N steps (default: every epoch).
        overwrite: replace a finished run; an unfinished one is resumed otherwise.

    Returns:
        The metrics dict written to metrics.json.
    """
    _backend.require_tensorflow("Training")
    if model not in BUILDERS:
        raise RunError(f"unknown --model {model!r}; choose one of {', '.join(sorted(BUILDERS))}")
    model_kwargs = dict(model_kwargs or {})
    strategy = make_strategy(distribute)  # first: MultiWorkerMirroredStrategy must precede other ops
    chief = _is_chief(strategy)
    state = _run_state(output, overwrite)
    if state == "overwrite" and chief:
        shutil.rmtree(output)
    os.makedirs(output, exist_ok=True)
    keras.utils.set_random_seed(seed)

    dataset, source = load_run_data(
        data, test_data=test_data, text_column=text_column, label_column=label_column, header=header,
        label_offset=label_offset, label_names=label_names, data_dir=data_dir,
        validation_fraction=validation_fraction, seed=seed,
    )

    encoder_path = os.path.join(output, "encoder.keras")
    if state == "resume" and os.path.exists(encoder_path):
        encoder = load_encoder(encoder_path)
    else:
        encoder = TextEncoder(**encoder_options(
            model, max_tokens=max_tokens, min_frequency=min_frequency, sequence_length=sequence_length,
            max_sentences=max_sentences, bigram_buckets=bigram_buckets,
        ))
        encoder.adapt(dataset["train"])
        if chief:
            save_encoder(encoder_path, encoder)

    with strategy.scope():
        classifier = build_model(model, dataset.num_classes, vocabulary_size=encoder.vocabulary_size(),
                                 **encoder_shape_kwargs(model, encoder), **model_kwargs)
        classifier.compile(
            optimizer=keras.optimizers.Adam(learning_rate),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )

    train_batches = make_batches(dataset["train"], encoder, batch_size, shuffle=shuffle, seed=seed)
    validation_batches = make_batches(dataset["validation"], encoder, batch_size)
    examples = sum(1 for _ in dataset["train"])
    timing = _Timing(examples)
    if distribute == "multi-worker":
        history = _fit_multi_worker(strategy, classifier, train_batches, epochs, batch_size, timing)
        resumed_from_epoch = 0
        # Evaluate locally on each worker: Keras's evaluate cannot reduce across workers either.
        classifier._distribute_strategy = None
    else:
        callbacks = [
            # Two checkpoints: a run killed while writing one resumes from the other.
            keras.callbacks.BackupAndRestore(os.path.join(output, "backup", "chief"), save_freq=checkpoint_every or "epoch",
                                             double_checkpoint=True),
            timing,
            keras.callbacks.CSVLogger(os.path.join(output, "history.csv"), append=True),
            keras.callbacks.TensorBoard(os.path.join(output, "logs")),
        ]
        history = classifier.fit(
            train_batches,
            validation_data=validation_batches,
            epochs=epochs,
            callbacks=callbacks,
            verbose=verbose,
            shuffle=False,  # make_batches shuffles, with the seed
        ).history
        resumed_from_epoch = epochs - len(history.get("loss", []))

    accuracy = {}
    for split in ("train", "validation", "test"):
        if split in dataset.splits:
            results = classifier.evaluate(make_batches(dataset[split], encoder, batch_size), verbose=0, return_dict=True)
            accuracy[split] = float(results["accuracy"])
    metrics = {
        "model": model,
        "model_kwargs": model_kwargs,
        "data": source if isinstance(source, str) else {k: str(v.path) for k, v in source.items()},
        "label_names": dataset.label_names,
        "accuracy": accuracy,
        "history": history if distribute == "multi-worker" else _read_history(os.path.join(output, "history.csv")),
        "seconds_per_epoch": timing.seconds,
        "examples_per_second": float(examples / np.mean(timing.seconds)) if timing.seconds else None,
        "parameters": int(classifier.count_params()),
        "epochs": epochs,
        "resumed_from_epoch": resumed_from_epoch,
        "batch_size": batch_size,
        "seed": seed,
        "distribute": distribute or "none",
        "replicas": strategy.num_replicas_in_sync,
        "encoder": encoder.get_config(),
    }
    if chief:
        save_run(output, classifier, encoder, dataset.label_names, metrics)
        shutil.rmtree(os.path.join(output, "backup"), ignore_errors=True)
    return metrics


def encoder_options(model, max_tokens=20000, min_frequency=1, sequence_length=256, max_sentences=15, bigram_buckets=50000):
    """`TextEncoder` arguments for `model`: HCAN is hierarchical (`max_sentences`), the
    dual-axial model reads hashed bigrams (`bigram_buckets`); the others use neither."""
    options = dict(max_tokens=max_tokens, min_frequency=min_frequency, sequence_length=sequence_length)
    if model == "hcan":
        options.update(hierarchical=True, max_sentences=max_sentences)
    if model == "dual_axial":
        options["bigram_buckets"] = bigram_buckets
    return options


def save_encoder(path, encoder):
    """Write a fitted encoder as a `.keras` file (a string-input model around it)."""
    text = keras.Input(shape=(), dtype="string", name="text")
    write_atomically(path, keras.Model(text, encoder(text), name="encoder").save)


def load_encoder(path):
    """The `TextEncoder` of a file written by `save_encoder` (safe mode)."""
    return keras.models.load_model(path, safe_mode=True).layers[-1]


def save_run(folder, model, encoder, label_names, metrics):
    """Write a finished run folder (see the module docstring) for a token-id `model`
    and its fitted `encoder`; `train()` ends with this. Each file is written
    atomically, metrics.json last: its presence marks the run finished."""
    os.makedirs(folder, exist_ok=True)
    save_encoder(os.path.join(folder, "encoder.keras"), encoder)
    write_atomically(os.path.join(folder, "model.keras"), model.save)
    write_text(os.path.join(folder, "vocabulary.txt"), "\n".join(encoder.get_vocabulary()) + "\n")
    write_text(os.path.join(folder, "labels.json"), json.dumps(list(label_names), indent=2))
    write_text(os.path.join(folder, "metrics.json"), json.dumps(metrics, indent=2, sort_keys=True))


def _fit_multi_worker(strategy, model, batches, epochs, global_batch_size, timing):
    """Data-parallel training across workers with a plain distributed loop.

    Keras 3's `fit` fails under MultiWorkerMirroredStrategy (it reduces a data batch
    and scalar logs across workers; keras-team/keras#20585), so this loop runs the
    same forward pass, loss and optimizer through `strategy.run`. The loss of each
    replica is averaged over the global batch (`tf.nn.compute_average_loss`), so the
    summed gradients equal single-device gradients. Not resumable: a restarted
    multi-worker run starts again from its first epoch.
    """
    distributed = strategy.experimental_distribute_dataset(batches)
    loss_function = keras.losses.SparseCategoricalCrossentropy(reduction=None)

    def replica_step(ids, labels):
        with tf.GradientTape() as tape:
            probabilities = model(ids, training=True)
            loss = tf.nn.compute_average_loss(loss_function(labels, probabilities), global_batch_size=global_batch_size)
            if model.losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
        gradients = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    @tf.function
    def step(ids, labels):
        return strategy.reduce("SUM", strategy.run(replica_step, args=(ids, labels)), axis=None)

    history = {"epoch": [], "loss": []}
    for epoch in range(epochs):
        timing.on_epoch_begin(epoch)
        losses = [float(step(ids, labels)) for ids, labels in distributed]
        timing.on_epoch_end(epoch)
        history["epoch"].append(float(epoch))
        history["loss"].append(float(np.mean(losses)))
    return history


def load_run(folder):
    """`(model, encoder, label_names)` of a finished run folder written by `train()`.

    Both `.keras` files load in Keras's safe mode (no code is deserialised): the
    package's layers are registered, and the models contain no lambda layers.
    """
    paths = [os.path.join(folder, name) for name in ("model.keras", "encoder.keras", "labels.json", "metrics.json")]
    missing = [os.path.basename(p) for p in paths if not os.path.exists(p)]
    if missing:
        raise RunError(f"{folder} is not a finished run folder: missing {', '.join(missing)}")
    model = keras.models.load_model(paths[0], safe_mode=True)
    encoder = load_encoder(paths[1])
    with open(paths[2], encoding="utf-8") as handle:
        return model, encoder, json.load(handle)


def encoder_shape_kwargs(model, encoder):
    """The builder arguments that must agree with the encoder's output shape."""
    if model == "hcan":
        return {"max_sentences": encoder.max_sentences, "max_words": encoder.sequence_length}
    kwargs = {"sequence_length": encoder.sequence_length}
    if model == "dual_axial":
        kwargs["bigram_buckets"] = encoder.bigram_buckets
    return kwargs


def _read_history(path):
    """history.csv as {column: [values per epoch]}."""
    if not os.path.exists(path):
        return {}
    rows = np.genfromtxt(path, delimiter=",", names=True, ndmin=1)
    return {name: [float(v) for v in rows[name]] for name in rows.dtype.names}
