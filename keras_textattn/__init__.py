"""keras-textattn: Keras 3 attention layers for text classification."""

from keras_textattn import layers


def explain(model_or_run, texts, encoder=None, label_names=None):
    """`keras_textattn.explain.explain` (TensorFlow backend). Once the subpackage
    `keras_textattn.explain` is imported it takes this name, and is callable too."""
    from keras_textattn.explain import explain as explain_texts

    return explain_texts(model_or_run, texts, encoder=encoder, label_names=label_names)


__version__ = "0.1.0"
__all__ = ["explain", "layers"]
