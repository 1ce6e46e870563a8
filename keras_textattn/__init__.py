"""keras-textattn: Keras 3 attention layers for text classification."""

from keras_textattn import layers
from keras_textattn import losses

__version__ = "0.1.0"
__all__ = ["layers", "losses"]
