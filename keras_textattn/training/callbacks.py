"""The Keras callbacks of a run: Ctrl-C at a batch's end, epoch seconds, TensorBoard's rate, divergence."""

import contextlib
import math
import signal
import threading
import time

import keras
import numpy as np

from keras_textattn.run_folder import RunError


class DeferredInterrupt(keras.callbacks.Callback):
    """Ctrl-C during `fit` stops training at the end of the current batch.

    Python raises `KeyboardInterrupt` wherever the main thread is; inside TensorFlow's
    input pipeline it reads as the end of the data, and Keras would end the epoch early
    and carry on. So while `fit` runs (`deferred`), SIGINT only sets a flag, and this
    callback raises `KeyboardInterrupt` at the next batch's end.
    """

    requested = False

    def on_train_batch_end(self, batch, logs=None):
        if self.requested:
            raise KeyboardInterrupt

    on_test_batch_end = on_train_batch_end
    on_epoch_end = on_train_batch_end

    @contextlib.contextmanager
    def deferred(self):
        if threading.current_thread() is not threading.main_thread():
            yield  # signal handlers belong to the main thread
            return

        def request(signum, frame):
            self.requested = True

        previous = signal.signal(signal.SIGINT, request)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
        self.on_train_batch_end(None)  # a Ctrl-C after the last batch


class EpochSeconds(keras.callbacks.Callback):
    """Adds each epoch's wall time to its logs as `seconds` (a column of history.csv)."""

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["seconds"] = time.perf_counter() - self._start


class EpochRateTensorBoard(keras.callbacks.TensorBoard):
    """Keras's TensorBoard callback, whose `epoch_learning_rate` is the rate the run's history
    records for the epoch (its first, set by the schedule's callbacks). Keras's reads the
    optimizer's after the epoch: a cosine's of the epoch's last batch, and a plateau's already
    halved, so TensorBoard drew each plateau cut one epoch early."""

    def _collect_learning_rate(self, logs):
        return logs if "learning_rate" in logs else super()._collect_learning_rate(logs)


def divergence(model, loss):
    """How an epoch that ended with training `loss` diverged ("its loss is nan"), or None: a loss
    that is NaN or infinite, or weights that are (a loss computed on clipped probabilities can
    stay finite while they are not numbers)."""
    if not math.isfinite(loss):
        return f"its loss is {loss}"
    if not weights_are_numbers(model):
        return "its weights are no longer numbers"
    return None


def check_converging(model, loss, epoch, learning_rate):
    """A `RunError` when an epoch ends diverged (`divergence`): a run of such weights predicts NaN
    ("Finished", with an accuracy of chance, it was written all the same)."""
    what = divergence(model, loss)
    if what is not None:
        raise diverged_run(epoch, what, learning_rate)


def diverged_run(epoch, what, learning_rate):
    """The `RunError` of a run whose epoch `epoch` (from 0) diverged as `what` says."""
    return RunError(
        f"training diverged in epoch {epoch + 1}: {what}; a lower --learning-rate (this run's: "
        f"{learning_rate:g}) trains stably. Checkpoints of earlier epochs, if any, stay in the run folder: "
        "start again with --overwrite"
    )


def weights_are_numbers(model):
    """Whether every weight of `model` is finite (none NaN or infinite)."""
    return all(np.isfinite(weight).all() for weight in model.get_weights())


class StopOnDivergence(keras.callbacks.Callback):
    """Raises `error(epoch, what)` at the end of an epoch that diverged (`divergence`), before its
    history row and checkpoint are written (and, in a search, before keras-tuner scores it); a
    progress bar's line (fit's `verbose=1`), which the raise leaves unfinished, is ended first,
    so that the error is a line of its own."""

    def __init__(self, error):
        super().__init__()
        self.error = error

    def on_epoch_end(self, epoch, logs=None):
        what = divergence(self.model, float((logs or {}).get("loss", 0.0)))
        if what is None:
            return
        if self.params.get("verbose") == 1:
            print(flush=True)
        raise self.error(epoch, what)
