"""Deployable artifacts from a finished run folder (TensorFlow backend).

- `saved_model(run, output)`: a SavedModel for TF Serving that takes raw strings (of one
  run, or of a list of runs: an ensemble that averages their probabilities).
- `tflite(run, output, quantization=None, calibration_texts=None)`: a LiteRT (TFLite)
  model of token ids, with the vocabulary and encoder settings beside it for the client.
- `onnx(run, output)`: an ONNX model of token ids (any batch size), with the same files
  beside it as the TFLite folder (`pip install 'keras-textattn[onnx]'`).
- `ClientTokenizer`: the encoder's tokenisation in plain Python, for clients of
  the TFLite and ONNX models (and the reference that the tests hold it to).

Each export verifies its artifact against the Keras model before it is moved into
place; see `verify_saved_model`, `verify_tflite` and `verify_onnx`.
"""

from keras_textattn.export.client import ClientTokenizer
from keras_textattn.export.onnx import onnx
from keras_textattn.export.onnx import verify_onnx
from keras_textattn.export.saved_model import TENSORFLOW_TEXT_OPS
from keras_textattn.export.saved_model import saved_model
from keras_textattn.export.saved_model import saved_model_ops
from keras_textattn.export.saved_model import verify_saved_model
from keras_textattn.export.tflite import QUANTIZATIONS
from keras_textattn.export.tflite import RecurrentInt8Error
from keras_textattn.export.tflite import tflite
from keras_textattn.export.tflite import verify_tflite

__all__ = [
    "ClientTokenizer",
    "QUANTIZATIONS",
    "RecurrentInt8Error",
    "TENSORFLOW_TEXT_OPS",
    "onnx",
    "saved_model",
    "saved_model_ops",
    "tflite",
    "verify_onnx",
    "verify_saved_model",
    "verify_tflite",
]
