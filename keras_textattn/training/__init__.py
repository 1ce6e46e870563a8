"""Training runs: `train()`, tf.distribute strategies, resumable checkpoints (TensorFlow backend)."""

from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import save_run
from keras_textattn.training.adversarial import use_adversarial_training
from keras_textattn.training.train import configure_cpu_devices
from keras_textattn.training.train import make_strategy
from keras_textattn.training.train import train

__all__ = ["RunError", "configure_cpu_devices", "load_run", "make_strategy", "save_run", "train",
           "use_adversarial_training"]
