"""The parts of keras-textattn that need no TensorFlow: a training run's options (`TrainConfig`),
the user-error types and the argument checks.

`import keras_textattn` registers the layers with Keras, which imports TensorFlow (seconds);
the command line reads its flags and checks its arguments from here first, so that `--help`
and a mistyped option answer at once. Users reach the same objects from
`keras_textattn.training` (`TrainConfig`) and `keras_textattn.errors`.
"""

from keras_textattn_config.checks import RunError
from keras_textattn_config.checks import UserError
from keras_textattn_config.train_config import TrainConfig

__all__ = ["RunError", "TrainConfig", "UserError"]
