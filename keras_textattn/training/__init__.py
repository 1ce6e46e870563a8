"""Training runs: `train()` and its options (`TrainConfig`), tf.distribute strategies, resumable
checkpoints (TensorFlow backend).

The modules, along the seams of a run: `run` (`train()` and the steps that write a run folder),
`checks` (options checked against each other and the model), `model_setup` (encoder lengths,
the classifier built, compiled and initialised), `callbacks`, `strategies`, `multi_worker` (the
loop Keras's `fit` cannot run), `run_state` (new, resumed or replaced folders; history),
`backup` (checkpoints), `schedules`, `adversarial`, `ray_launcher`. What other packages use is
re-exported here.
"""

from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import save_run
from keras_textattn.training.adversarial import use_adversarial_training
from keras_textattn.training.backup import RoomForCheckpoints
from keras_textattn.training.callbacks import StopOnDivergence
from keras_textattn.training.checks import check_embeddings
from keras_textattn.training.checks import check_preset
from keras_textattn.training.model_setup import choose_lengths_saying_so
from keras_textattn.training.model_setup import classifier_loss
from keras_textattn.training.model_setup import compile_classifier
from keras_textattn.training.run import train
from keras_textattn.training.schedules import schedule_callbacks
from keras_textattn.training.strategies import configure_cpu_devices
from keras_textattn.training.strategies import make_strategy
from keras_textattn_config.train_config import TrainConfig

__all__ = [
    "RoomForCheckpoints",
    "RunError",
    "StopOnDivergence",
    "TrainConfig",
    "check_embeddings",
    "check_preset",
    "choose_lengths_saying_so",
    "classifier_loss",
    "compile_classifier",
    "configure_cpu_devices",
    "load_run",
    "make_strategy",
    "save_run",
    "schedule_callbacks",
    "train",
    "use_adversarial_training",
]
