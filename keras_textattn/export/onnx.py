"""ONNX export of the token-id model (tf2onnx), verified with onnxruntime."""

import contextlib
import logging
import os

import numpy as np
import tensorflow as tf

from keras_textattn import _backend
from keras_textattn._files import check_output
from keras_textattn._files import write_folder_atomically
from keras_textattn.errors import UserError
from keras_textattn.errors import check_flag
from keras_textattn.export._disk import full_disk_as_os_error
from keras_textattn.export._float32 import computing_in_float32
from keras_textattn.export.tflite import compare_with_keras
from keras_textattn.export.tflite import labels_record
from keras_textattn.export.tflite import the_one_run
from keras_textattn.export.tflite import write_json
from keras_textattn.export.tflite import write_tokenizer_files
from keras_textattn.run_folder import load_run

# What an export writes: `overwrite` replaces a folder holding these alone (`check_output`).
ONNX_ENTRIES = frozenset({"model.onnx", "encoder.json", "labels.json", "vocabulary.txt", "verification.json"})
# ONNX opset 17 (2022): onnxruntime 1.14 and later, and most other runtimes, run it.
OPSET = 17
INSTALL = "pip install 'keras-textattn[onnx]'"


def onnx(run, output, *, overwrite=False):
    """Export a run folder's token-id model to an ONNX folder.

    The folder holds `model.onnx` (opset `OPSET`), and as a TFLite folder does `vocabulary.txt`,
    `encoder.json` (the tokenisation settings and the input names and shapes, the batch axis
    `null`: any batch size), `labels.json` and `verification.json`. Inputs: `token_ids` int32
    `(batch, sequence_length)` (`(batch, sentences, words)` for HCAN, plus `bigram_ids` of that
    shape for a model with bigrams); output: the probabilities `(batch, classes)` float32.
    Tokenise with `ClientTokenizer` (or its port). A run trained under a mixed-precision policy
    is exported computing in float32 (`computing_in_float32`).

    Needs the `onnx` extra (onnx, onnxruntime, tf2onnx). TensorFlow's `Log1p`, which the layers'
    overflow-proof softplus uses and ONNX has no operator for, is written as `Log(1 + x)`: its
    argument there is `exp(-|x|)`, in (0, 1], where the two differ by float32's rounding.

    Args:
        run: a finished run folder of `keras_textattn.training.train`.
        output: the folder to write.
        overwrite: replace an earlier export at `output`; otherwise an existing `output` is
            refused, and so is one holding files an export does not write.

    Returns:
        The verification report (see `verify_onnx`) plus `"path"`.
    """
    _backend.require_tensorflow("ONNX export")
    check_flag("overwrite", overwrite)
    run = the_one_run(run, "an ONNX", "client")
    _require_onnx()
    check_output(output, overwrite, ONNX_ENTRIES, source=run)  # before the slow part
    model, encoder, label_names = load_run(run)
    model = computing_in_float32(model)
    report = {}

    def write(folder):
        content = convert_to_onnx(model)
        with open(os.path.join(folder, "model.onnx"), "wb") as handle:
            handle.write(content)
        write_tokenizer_files(folder, encoder, {tensor.name: [None, *tensor.shape[1:]] for tensor in model.inputs})
        write_json(os.path.join(folder, "labels.json"), labels_record(run, label_names))
        report.update(verify_onnx(content, model, encoder))
        write_json(os.path.join(folder, "verification.json"), report)

    with full_disk_as_os_error():
        write_folder_atomically(output, write, ONNX_ENTRIES, overwrite)
    return {"path": os.path.abspath(output), **report}


def _require_onnx():
    missing = [name for name in ("onnx", "onnxruntime", "tf2onnx") if not _importable(name)]
    if missing:
        raise UserError(f"ONNX export needs {', '.join(missing)}: {INSTALL}")


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


def convert_to_onnx(model):
    """The serialised ONNX model of a token-id `model`, any batch size."""
    import tf2onnx

    signature = [tf.TensorSpec((None, *tensor.shape[1:]), tensor.dtype, name=tensor.name) for tensor in model.inputs]
    call = tf.function(lambda *ids: {"probabilities": model(list(ids) if len(ids) > 1 else ids[0], training=False)})
    with _quiet_loggers("tensorflow", "tf2onnx"):  # notes on graph serialisation, not problems of the export
        proto, _ = tf2onnx.convert.from_function(
            call, input_signature=signature, opset=OPSET, custom_op_handlers={"Log1p": (_log1p_as_log, [])}
        )
    return proto.SerializeToString()


@contextlib.contextmanager
def _quiet_loggers(*names):
    """The Python loggers `names` at ERROR while the block runs, then as they were."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _log1p_as_log(ctx, node, name, args):
    """tf2onnx's handler for TensorFlow's Log1p, which ONNX lacks: Log(x + 1)."""
    from tf2onnx import utils

    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
    one = ctx.make_const(utils.make_name(f"{node.name}_one"), np.array(1, dtype=dtype))
    plus_one = ctx.make_node("Add", [node.input[0], one.output[0]])
    ctx.replace_input(node, node.input[0], plus_one.output[0], 0)
    node.type = "Log"


def onnx_session(model):
    """An onnxruntime CPU session of `model` (a path or the serialised bytes), called as
    `session(**feeds) -> probabilities`; a `ValueError` where onnxruntime cannot load it."""
    import onnxruntime
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings are about graph optimisations it made
    unreadable = (state.Fail, state.InvalidArgument, state.InvalidGraph, state.InvalidProtobuf, state.NoSuchFile)
    try:
        session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except unreadable as error:  # not Python's exceptions: each derives from Exception alone
        raise ValueError(str(error).splitlines()[0]) from None
    return lambda **feeds: session.run(None, feeds)[0]


def verify_onnx(content, model, encoder, texts=None, atol=1e-4):
    """Run the ONNX model with onnxruntime on `texts` (default: probe texts of the vocabulary plus
    hostile inputs), one text a call, and compare with the Keras model (`compare_with_keras`).

    Raises:
        ValueError: it differs from the Keras model by more than `atol`.
    """
    session = onnx_session(content)
    report = compare_with_keras(session, model, encoder, texts, atol, "The ONNX model")
    return {"size_bytes": len(content), **report}
