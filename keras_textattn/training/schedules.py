"""Learning-rate schedules of `train()`, each resumable after a kill.

- "constant": Adam's rate throughout (the default).
- "cosine": `rate * (1 + cos(pi * t / epochs)) / 2`, set before every batch, where `t` is
  the training done in epochs (epoch counted from 0, plus the fraction of its batches done)
  and `epochs` the most `train` may run: the full rate at the first step, near zero at the
  last, as Keras's `CosineDecay` over all the steps.
- "step:E1,E2,...": the rate divided by 10 from each listed epoch on, counted from 1 as the
  papers count (CSPAN, sec. 3.1: "step:20,25" trains epochs 1-19 at the rate, 20-24 at a
  tenth, 25 on at a hundredth).
- "plateau": the rate halved after an epoch whose validation loss is not the lowest so far
  (Keras's `ReduceLROnPlateau`, patience 1, at least a hundredth of the rate).

The first two are functions of the training done (`rate_at`), so a resumed run sets the
same rates; a run's history records each epoch's first rate. The plateau's counters are
saved per epoch beside the run's checkpoints, and the rate itself is an optimizer variable,
saved in every checkpoint.
"""

import json
import math
import os

import keras

from keras_textattn._files import write_text
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import read_json
from keras_textattn_config.schedules import EPOCH_SCHEDULES  # noqa: F401 (re-exported)
from keras_textattn_config.schedules import parse_schedule


def rate_at(schedule, learning_rate, epochs):
    """`t -> rate` of a schedule that is a function of the training done ("cosine",
    "step:..."), `t` in epochs (epoch counted from 0 plus the fraction of its batches done);
    None for "constant" and "plateau"."""
    kind, drops = parse_schedule(schedule)
    if kind == "cosine":
        return lambda t: learning_rate * (1 + math.cos(math.pi * t / epochs)) / 2
    if kind == "step":
        return lambda t: learning_rate * 0.1 ** sum(int(t) + 1 >= drop for drop in drops)
    return None


def schedule_callbacks(schedule, learning_rate, epochs, folder=None):
    """The callbacks that apply `schedule` (a name of the module docstring) to a run whose
    resumable state lives in `folder` (the run's backup folder; only the plateau keeps any,
    so it may be None for the `EPOCH_SCHEDULES`, e.g. in a tuner trial)."""
    if parse_schedule(schedule)[0] == "plateau":
        return [ResumablePlateau(folder, factor=0.5, patience=1, min_lr=learning_rate / 100)]
    rate = rate_at(schedule, learning_rate, epochs)
    return [ScheduledRate(rate)] if rate else []


class ScheduledRate(keras.callbacks.Callback):
    """Sets the optimizer's rate to `rate(t)` before every batch, `t` the training done in
    epochs (`rate_at`), and logs each epoch's first rate as `learning_rate` (as Keras's
    `LearningRateScheduler`, which sets it once an epoch). When `fit` does not know how many
    batches an epoch has (data of unknown size), the rate changes once an epoch."""

    def __init__(self, rate):
        super().__init__()
        self.rate = rate
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        batches = self.params.get("steps")
        self.model.optimizer.learning_rate = self.rate(self.epoch + batch / batches if batches else self.epoch)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.rate(epoch))


class ResumablePlateau(keras.callbacks.ReduceLROnPlateau):
    """`ReduceLROnPlateau` on the validation loss whose counters survive a kill: after each
    epoch they are saved in `folder/plateau.json` under the epoch's number, and a resumed
    `fit` (`initial_epoch` E) starts from those saved after epoch E - 1. Place it before
    the checkpoint callback."""

    def __init__(self, folder, **kwargs):
        super().__init__(monitor="val_loss", **kwargs)
        self.state_path = os.path.join(folder, "plateau.json")

    def on_epoch_begin(self, epoch, logs=None):
        saved = read_json(self.state_path) if os.path.exists(self.state_path) else {}
        state = saved.get(str(epoch - 1))
        if state:
            self.best, self.wait, self.cooldown_counter = state["best"], state["wait"], state["cooldown"]

    def on_epoch_end(self, epoch, logs=None):
        if (logs or {}).get("val_loss") is None:
            raise RunError("the plateau schedule needs a validation loss; the run has no validation data")
        super().on_epoch_end(epoch, logs)
        saved = read_json(self.state_path) if os.path.exists(self.state_path) else {}
        saved[str(epoch)] = {"best": float(self.best), "wait": self.wait, "cooldown": self.cooldown_counter}
        os.makedirs(os.path.dirname(self.state_path), exist_ok=True)
        write_text(self.state_path, json.dumps(saved))
