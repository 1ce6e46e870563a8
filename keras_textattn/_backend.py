"""The TensorFlow-only parts of keras_textattn say so before anything else fails."""

import keras


def require_tensorflow(feature):
    """Raise a `RuntimeError` unless Keras runs on the TensorFlow backend."""
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise RuntimeError(
            f"{feature} runs TensorFlow ops (tensorflow-text, tf.data), so it needs the "
            f"TensorFlow backend; Keras is using {backend!r}. Set KERAS_BACKEND=tensorflow, "
            "or feed integer token ids to the layers and models on this backend."
        )
