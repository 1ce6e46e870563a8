"""keras-textattn: Keras 3 attention layers for text classification.

Importing the package registers everything it saves with Keras, so `keras.models.load_model`
loads a run's `model.keras` and `encoder.keras` (and a raw-string model built with an encoder)
in safe mode with no `custom_objects`: the layers, the loss, the metric, the lazy optimizers and
their embedding on any backend, the text encoder on TensorFlow, whose ops it runs.
"""

__version__ = "0.1.0"

import keras  # noqa: E402

from keras_textattn import embedding  # noqa: E402
from keras_textattn import layers  # noqa: E402
from keras_textattn import losses  # noqa: E402
from keras_textattn import metrics  # noqa: E402
from keras_textattn import optimizers  # noqa: E402

if keras.backend.backend() == "tensorflow":
    from keras_textattn import text  # noqa: F401 (registers TextEncoder)

__all__ = ["embedding", "layers", "losses", "metrics", "optimizers"]
