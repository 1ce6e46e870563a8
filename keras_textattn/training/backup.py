"""Checkpoints of an unfinished run, so that a killed run resumes where it was.

Each checkpoint is one file, `backup/epoch-EEEE-batch-BBBBBB.weights.h5`: the model's and
the optimizer's variables (Keras's `save_weights` keeps both) after `BBBBBB` batches of
epoch `EEEE` (batch 0: the end of epoch `EEEE - 1`). The position is in the name, so a
checkpoint is complete or absent, never half of a pair. Each is written atomically and
the two newest are kept: a file damaged on disk is skipped for the one before it.

Keras's `BackupAndRestore` was not enough: it deletes its state when `fit` returns (a
kill before the run folder is written then lost the training), takes no checkpoint at
an epoch's end when it saves every N steps, and an empty metadata file stopped every
resume.
"""

import functools
import json
import math
import os
import re
import warnings

import keras
import numpy as np

from keras_textattn._files import check_room
from keras_textattn._files import write_atomically
from keras_textattn._files import write_text
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import read_json

_NAME = re.compile(r"^epoch-(\d{4,})-batch-(\d{6,})\.weights\.h5$")
KEEP = 2


def _checkpoints(folder):
    """`[(epoch, batch, path)]`, newest first."""
    if not os.path.isdir(folder):
        return []
    found = [
        (int(m[1]), int(m[2]), os.path.join(folder, name)) for name in os.listdir(folder) if (m := _NAME.match(name))
    ]
    return sorted(found, reverse=True)


def check_room_for_weights(model, path):
    """An `OSError` ENOSPC (a full disk) or EDQUOT (a used-up quota) when the folder of `path`
    has less room than `model.save_weights` needs there (`check_room`). HDF5 failing mid-write
    leaves a file that it cannot close, and Python segfaults as it exits (h5py#914): no room must
    be found before HDF5 starts."""
    optimizer = getattr(model, "optimizer", None)  # none before `compile`
    variables = [*model.weights, *(optimizer.variables if optimizer else [])]
    needed = sum(math.prod(v.shape) * np.dtype(v.dtype).itemsize + 4096 for v in variables) + 65536  # + HDF5's headers
    check_room(path, needed)


def save_weights(model, path):
    """`model.save_weights(path)`, written atomically, after `check_room_for_weights`."""
    check_room_for_weights(model, path)
    write_atomically(path, model.save_weights)


class RoomForCheckpoints(keras.callbacks.Callback):
    """At each epoch's end, `check_room_for_weights` for the weights files that later callbacks
    (keras-tuner's best-epoch checkpoint) write there: `paths`."""

    def __init__(self, paths):
        super().__init__()
        self.paths = list(paths)

    def on_epoch_end(self, epoch, logs=None):
        for path in self.paths:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            check_room_for_weights(self.model, path)


class RunBackup(keras.callbacks.Callback):
    """Save a checkpoint at the end of every epoch and, with `every`, every `every` batches."""

    def __init__(self, folder, every=None):
        super().__init__()
        if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
            raise RunError(f"the checkpoint interval must be a positive number of steps; got {every!r}")
        self.folder = folder
        self.every = every
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.every and (batch + 1) % self.every == 0:
            self.save(self._epoch, batch + 1)

    def on_epoch_end(self, epoch, logs=None):
        self.save(epoch + 1, 0)

    def save(self, epoch, batch):
        os.makedirs(self.folder, exist_ok=True)
        path = os.path.join(self.folder, f"epoch-{epoch:04d}-batch-{batch:06d}.weights.h5")
        save_weights(self.model, path)
        for *_, old in _checkpoints(self.folder)[KEEP:]:
            os.remove(old)


def restore(model, folder):
    """Load the newest readable checkpoint of `folder` into the compiled `model`.

    Returns:
        The epoch to resume from (its first batch: Keras restarts an interrupted epoch
        from the beginning, with the weights of the checkpoint), or 0 without a checkpoint.

    Raises:
        RunError: checkpoints exist but none can be read: damaged files (h5py cannot open
            them), or weights of another model than `model` (Keras's `ValueError`, e.g. a run
            started with a version of the library whose preset built other layers).
    """
    checkpoints = _checkpoints(folder)
    if not checkpoints:
        return 0
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
    damaged, other_model = [], None
    for epoch, _, path in checkpoints:
        try:
            model.load_weights(path)
        except (OSError, KeyError) as error:
            damaged.append(path)
            warnings.warn(
                f"skipping the damaged checkpoint {path} ({type(error).__name__}); using the one before it",
                stacklevel=2,
            )
        except ValueError as error:
            other_model = other_model or str(error).strip().splitlines()[0].rstrip(":")
            warnings.warn(
                f"skipping the checkpoint {path}, whose weights do not fit this model; using the one before it",
                stacklevel=2,
            )
        else:
            return epoch
    if other_model:
        raise RunError(
            f"the checkpoints of {folder} hold the weights of another model than these arguments build "
            f"(Keras: {other_model}); was the run started with another version of keras-textattn? Resume "
            f"it with that version, or delete {folder} to start the run again from its first epoch"
        )
    raise RunError(
        f"no checkpoint of {folder} can be read ({', '.join(damaged)} are damaged); "
        f"delete {folder} to start the run again from its first epoch"
    )


def copy_from_chief(strategy, chief, paths, folder):
    """Give every worker of `strategy` the chief's files: on the chief, `paths` (those that exist;
    other workers' `paths` are ignored); every other worker writes them into `folder` under
    their names. A multi-worker run resumes this way from the chief's backup alone, so its run
    folder need not be on a disk that the other workers share.

    The bytes go through the strategy's collective: an all-reduced sum to which only replica 0,
    the chief's first (TensorFlow numbers the chief's replicas first), gives its values, the
    others zeros (`tf.distribute.ReduceOp` has no broadcast). First the names and sizes, then
    each file, as int32 words: every worker takes part with the same shapes.
    """
    present = [path for path in paths if os.path.isfile(path)] if chief else []
    names_and_sizes = {os.path.basename(path): os.path.getsize(path) for path in present}
    manifest = json.dumps(names_and_sizes).encode() if chief else None  # the other workers receive it
    size = int(_from_chief(strategy, np.array([len(manifest) if chief else 0], np.int32))[0])
    manifest = json.loads(_from_chief(strategy, _words(manifest, size)).tobytes()[:size])
    by_name = {os.path.basename(path): path for path in present}
    for name, size in manifest.items():
        content = None
        if chief:
            with open(by_name[name], "rb") as handle:
                content = handle.read()
        received = _from_chief(strategy, _words(content, size)).tobytes()[:size] if size else b""
        if not chief:
            write_atomically(os.path.join(folder, name), functools.partial(_write_bytes, content=received))


def _write_bytes(path, content):
    with open(path, "wb") as handle:
        handle.write(content)


def _words(content, size):
    """`content` (bytes; None: zeros) as the int32 words that hold `size` bytes."""
    return np.frombuffer((content or b"").ljust(-(-size // 4) * 4, b"\0"), np.int32)


def _from_chief(strategy, words):
    """The int32 array `words` as replica 0 holds it, on every worker (the others' are not read,
    only their shape: the same on every worker)."""

    def given(context):
        return words if context.replica_id_in_sync_group == 0 else np.zeros_like(words)

    values = strategy.experimental_distribute_values_from_function(given)
    return np.asarray(strategy.reduce("SUM", values, axis=None))


class BestEpoch(keras.callbacks.Callback):
    """Early stopping on a validation metric, with the best epoch's weights kept on disk.

    `monitor` is "loss" (the validation loss, lower is better) or "accuracy" (higher is
    better). At each epoch's end, a better value than any before writes the weights to
    `folder/best.weights.h5` and `{"epoch", "val_<monitor>", "stopped"}` to `folder/best.json`;
    `patience` epochs without a better one stop training (`"stopped": true`). The state is
    on disk, so a resumed run counts on from where the killed one was, and one that had
    stopped does not train again. Give it a place before the epoch's checkpoint
    (`RunBackup`) among the callbacks.
    """

    def __init__(self, folder, patience, monitor="loss"):
        super().__init__()
        if monitor not in ("loss", "accuracy"):
            raise RunError(f"early stopping monitors loss or accuracy; got {monitor!r}")
        self.folder = folder
        self.patience = patience
        self.key = f"val_{monitor}"
        self.sign = 1.0 if monitor == "loss" else -1.0  # the value times sign: lower is better
        self.state_path = os.path.join(folder, "best.json")
        self.weights_path = os.path.join(folder, "best.weights.h5")
        self.best = read_json(self.state_path) if os.path.exists(self.state_path) else None

    @property
    def stopped(self):
        return bool(self.best and self.best["stopped"])

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.key)
        if value is None:
            raise RunError(f"early stopping needs a validation {self.key[4:]}; the run has no validation data")
        os.makedirs(self.folder, exist_ok=True)
        if self.best is None or self.sign * value < self.sign * self.best[self.key]:
            save_weights(self.model, self.weights_path)
            self.best = {"epoch": epoch, self.key: float(value), "stopped": False}
        elif epoch - self.best["epoch"] >= self.patience:
            self.best["stopped"] = True
            self.model.stop_training = True
        write_text(self.state_path, json.dumps(self.best))

    def restore_best(self):
        """Load the best epoch's weights into the model; returns that epoch (None without one)."""
        if self.best is None:
            return None
        self.model.load_weights(self.weights_path)
        return self.best["epoch"]
