"""LiteRT (TFLite) export of the token-id model, verified with the LiteRT interpreter."""

import contextlib
import itertools
import json
import os
import re
import sys
import tempfile
import time
import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_textattn import _backend
from keras_textattn._files import as_items
from keras_textattn._files import as_paths
from keras_textattn._files import check_output
from keras_textattn._files import write_folder_atomically
from keras_textattn.datasets.formats import LocalFile
from keras_textattn.datasets.formats import text_batches
from keras_textattn.datasets.streaming import each_file
from keras_textattn.errors import UserError
from keras_textattn.errors import check_answered
from keras_textattn.errors import check_flag
from keras_textattn.export._disk import full_disk_as_os_error
from keras_textattn.export._float32 import computing_in_float32
from keras_textattn.export._probes import probe_texts
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import run_thresholds
from keras_textattn.vocabulary import OOV_ID
from keras_textattn.vocabulary import PAD_ID

QUANTIZATIONS = (None, "dynamic", "float16", "int8")
# Full-integer quantization calibrates on this many texts, and is checked on as many others,
# a seeded sample of the first `CALIBRATION_ROWS_READ` of a file (the converter's guide
# suggests a few hundred for calibration).
CALIBRATION_TEXTS = 200
CALIBRATION_ROWS_READ = 20_000
# An int8 export whose labels agree with the float model's on fewer of those others is warned of.
INT8_AGREEMENT_WARNED = 0.98
# A layer normalisation whose epsilon is below this is named in that warning (int8 cannot resolve
# the tiny variances such an epsilon amplifies).
SMALL_EPSILON = 1e-4
# What an export writes: `overwrite` replaces a folder holding these alone (`check_output`).
TFLITE_ENTRIES = frozenset({"model.tflite", "encoder.json", "labels.json", "vocabulary.txt", "verification.json"})
# What LiteRT writes natively to stderr at the first call of an interpreter in a process; no
# setting of its Python API silences it (google-ai-edge/mediapipe#3672, pharmpy/pharmpy#1326).
XNNPACK_NOTICE = "INFO: Created TensorFlow Lite XNNPACK delegate for CPU."
# What the converter's calibration writes natively to stderr for an int8 model of float output.
CALIBRATION_NOTICE = (
    "fully_quantize: 0, inference_type: 6, input_inference_type: FLOAT32, output_inference_type: FLOAT32"
)


def tflite(run, output, *, quantization=None, calibration_texts=None, overwrite=False):
    """Export a run folder's token-id model to a LiteRT folder.

    The folder holds `model.tflite` (TFLite builtin ops only, so the standard
    runtime runs it without the Flex delegate), `vocabulary.txt` (line i is id i),
    `encoder.json` (the tokenisation settings and the input names and shapes),
    `labels.json` and `verification.json`. The model takes one text per call:
    inputs `(1, sequence_length)` int32 (`(1, sentences, words)` for HCAN, plus
    `bigram_ids` of that shape for a model with bigrams), output `probabilities` `(1, classes)`.
    A batch size of one is what a device needs, and it lets the converter turn
    the recurrent layers (LAMA's BiGRU, CSPAN's BiLSTM) into builtin ops, which
    fails for a dynamic batch. Tokenise with `ClientTokenizer` (or its port). A run
    trained under a mixed-precision policy is exported computing in float32
    (`computing_in_float32`; TFLite's builtins take no float16 activations).

    `quantization="int8"` is full-integer quantization, for accelerators that run
    int8 only (Edge TPU, NPUs, DSPs): weights and activations are int8, with ranges
    calibrated on `CALIBRATION_TEXTS` texts sampled from `calibration_texts`; the
    token-id inputs stay int32 and the output float32 probabilities, so clients are
    unchanged. Its labels are not the float model's for every text: the report gives
    how often they agree on as many other texts of `calibration_texts`
    (`held_out_argmax_agreement`; the docs' results page has the paper models'), and a
    warning says so where that is below `INT8_AGREEMENT_WARNED`.
    Models with recurrent layers (LAMA's BiGRU, CSPAN's BiLSTM) are refused (`RecurrentInt8Error`): TensorFlow's
    calibrator crashes the process on them (tensorflow/tensorflow#87468, #41305);
    export those with "dynamic".

    Args:
        run: a finished run folder of `keras_textattn.training.train`.
        output: the folder to write.
        quantization: None (float32), "dynamic" (int8 weights), "float16" (weights) or
            "int8" (weights and activations).
        calibration_texts: for "int8" only, and required there: texts like those the
            model will read (the training file will do): a data file (read as
            `LocalFile(path)` reads it), a `LocalFile`, or a list of texts.
        overwrite: replace an earlier export at `output`; otherwise an existing `output` is
            refused, and so is one holding files an export does not write.

    Returns:
        The verification report (see `verify_tflite`) plus `"path"`.
    """
    _backend.require_tensorflow("TFLite export")
    check_flag("overwrite", overwrite)
    run = the_one_run(run, "a TFLite", "device")
    if quantization not in QUANTIZATIONS:
        raise ValueError(
            f"`quantization` must be one of None, 'dynamic', 'float16', 'int8'. Received: quantization={quantization!r}"
        )
    if quantization == "int8" and calibration_texts is None:
        raise UserError(
            "int8 quantization calibrates its ranges on texts like those the model will read: give "
            "calibration_texts (a data file such as the training file, a LocalFile, or a list of texts)"
        )
    if quantization != "int8" and calibration_texts is not None:
        raise UserError("calibration texts go with int8 quantization only")
    check_output(output, overwrite, TFLITE_ENTRIES, source=run)  # before the slow part
    sampled = [] if calibration_texts is None else sample_calibration_texts(calibration_texts, 2 * CALIBRATION_TEXTS)
    model, encoder, label_names = load_run(run)
    model = computing_in_float32(model)
    if sampled:
        check_no_recurrent_layers(model)
    report = {}

    def write(folder):
        content = convert(model, quantization, _encoded(encoder, sampled[::2]) if sampled else None)
        with open(os.path.join(folder, "model.tflite"), "wb") as handle:
            handle.write(content)
        write_tokenizer_files(folder, encoder, {tensor.name: [1, *tensor.shape[1:]] for tensor in model.inputs})
        write_json(os.path.join(folder, "labels.json"), labels_record(run, label_names))
        report.update(verify_tflite(content, model, encoder, quantization=quantization))
        if sampled:
            held_out = verify_tflite(content, model, encoder, sampled[1::2], quantization=quantization)
            report.update(
                calibration_texts=len(sampled[::2]),
                held_out_texts=held_out["texts"],
                held_out_argmax_agreement=held_out["argmax_agreement"],
            )
        write_json(os.path.join(folder, "verification.json"), report)

    with full_disk_as_os_error():
        write_folder_atomically(output, write, TFLITE_ENTRIES, overwrite)
    warning = int8_agreement_warning(model, report)
    if warning:
        warnings.warn(warning, stacklevel=2)
    return {"path": os.path.abspath(output), **report}


def the_one_run(run, export, client):
    """The one run folder of `run` (a path or a list of one), else a `UserError`: an export for a
    `client` that tokenises ("device") holds one run, as "a TFLite" or "an ONNX" `export` says."""
    runs = as_paths(run)
    if not runs:
        raise UserError("no run to export: give a run folder")
    if len(runs) > 1:
        raise UserError(
            f"{export} export holds one run (a {client} tokenises for one vocabulary); export an ensemble "
            f"as a SavedModel, or export each run and average their probabilities on the {client}"
        )
    return runs[0]


def int8_agreement_warning(model, report):
    """What `tflite` warns of when an int8 export's held-out agreement (`report`, its
    verification) is below `INT8_AGREEMENT_WARNED`, naming a layer normalisation of `model`
    whose epsilon is below `SMALL_EPSILON`; None when the agreement is enough."""
    agreement = report.get("held_out_argmax_agreement", 1.0)
    if agreement >= INT8_AGREEMENT_WARNED:
        return None
    small = min(
        (
            layer.epsilon
            for layer in model._flatten_layers()
            if isinstance(layer, keras.layers.LayerNormalization) and layer.epsilon < SMALL_EPSILON
        ),
        default=None,
    )
    retrain = (
        ""
        if small is None
        else (
            f"; its layer normalisation's epsilon {small:g} amplifies rows of small variance past what int8 resolves: "
            "a model trained with a larger one (HCAN: layer_norm_epsilon=1e-3) keeps more"
        )
    )
    return (
        f"the int8 model's label is not the float model's for {1 - agreement:.0%} of "
        f"{report['held_out_texts']} texts of the calibration data it was not calibrated on; "
        "quantization 'dynamic' (float activations) keeps nearly all (the guide \"Export and serving\")" + retrain
    )


def write_tokenizer_files(folder, encoder, inputs=None):
    """Write what `ClientTokenizer` reads: `vocabulary.txt` (line i is id i) and
    `encoder.json` (the tokenisation settings, and the model's input shapes)."""
    with open(os.path.join(folder, "vocabulary.txt"), "w", encoding="utf-8", newline="\n") as handle:
        handle.write("\n".join(encoder.get_vocabulary()) + "\n")
    config = encoder.get_config()
    settings = {
        key: config[key]
        for key in (
            "sequence_length",
            "max_sentences",
            "hierarchical",
            "lowercase",
            "strip_html",
            "normalization",
            "bigram_buckets",
            "split_cjk",
            "bigrams_of",
            "split_long_sentences",
        )
    }
    settings.update(padding_id=PAD_ID, oov_id=OOV_ID, inputs=inputs or {})
    write_json(os.path.join(folder, "encoder.json"), settings)


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=2)


def labels_record(run, label_names):
    """What an export's labels.json holds: the class names by id, or for a multi-label run
    `{"labels": [names by id], "thresholds": [each label's]}` (a text has every label whose
    probability reaches its threshold; `run_folder.run_thresholds`)."""
    thresholds = run_thresholds(run, label_names)
    return list(label_names) if thresholds is None else {"labels": list(label_names), "thresholds": thresholds}


class RecurrentInt8Error(UserError):
    """An int8 export refused because the model has recurrent layers (LAMA's BiGRU, CSPAN's
    BiLSTM): TensorFlow's calibrator crashes the process on them. Catch it to fall back to
    quantization "dynamic"."""


def check_no_recurrent_layers(model):
    """A `RecurrentInt8Error` naming the recurrent layers of `model`, which int8 calibration crashes on."""
    recurrent = [layer.name for layer in model._flatten_layers() if isinstance(layer, keras.layers.RNN)]
    if recurrent:
        raise RecurrentInt8Error(
            f"Model {model.name!r} has recurrent layers ({', '.join(recurrent)}), and TensorFlow's int8 calibrator "
            "crashes the process on them (tensorflow/tensorflow#87468); export it with quantization 'dynamic' "
            "(int8 weights) instead"
        )


def sample_calibration_texts(texts, count, seed=0):
    """A seeded sample of `count` texts of a data file, a `LocalFile` or a list of texts
    (of a file, its first `CALIBRATION_ROWS_READ` rows: a file sorted by label still gives
    every label); a `UserError` where there are none."""
    if isinstance(texts, (str, os.PathLike)):
        texts = LocalFile(texts)
    if isinstance(texts, LocalFile):
        name = os.fspath(texts.path)
        rows = (text for file in each_file(texts) for _, batch in text_batches(file, 256) for text in batch)
        texts = list(itertools.islice(rows, CALIBRATION_ROWS_READ))
    else:
        name = "calibration_texts"
        given, texts = texts, as_items(texts)
        if texts is None or not all(isinstance(text, (str, bytes)) for text in texts):
            raise UserError(
                f"calibration_texts: expected a data file, a LocalFile or a list of texts; got {given!r:.80}"
            )
    if not texts:
        raise UserError(f"{name}: no texts to calibrate on")
    chosen = np.random.default_rng(seed).permutation(len(texts))[:count]
    return [texts[i] for i in sorted(chosen)]


def _encoded(encoder, texts):
    """The encoder's ids of `texts` as a list of NumPy arrays, one per model input."""
    encoded = encoder(tf.constant(texts, tf.string))
    return [keras.ops.convert_to_numpy(x) for x in (encoded if isinstance(encoded, tuple) else [encoded])]


def convert(model, quantization=None, calibration=None):
    """The `.tflite` bytes of a token-id `model` with batch size 1, builtin ops only
    (int8 builtins only for "int8", calibrated one row at a time on `calibration`, the
    encoded texts as `_encoded` gives them).

    Raises:
        ValueError: the model has an op that TFLite has no builtin for; the
            message names it.
    """
    signature = [tf.TensorSpec((1, *tensor.shape[1:]), tensor.dtype, name=tensor.name) for tensor in model.inputs]
    with tempfile.TemporaryDirectory() as folder:
        archive = keras.export.ExportArchive()
        archive.track(model)
        archive.add_endpoint(
            "serving_default",
            lambda inputs: {"probabilities": model(inputs, training=False)},
            input_signature=[signature if len(signature) > 1 else signature[0]],
        )
        archive.write_out(folder, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantization:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantization == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if quantization == "int8":
            names = [tensor.name for tensor in model.inputs]
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            converter.representative_dataset = lambda: (
                {name: values[row : row + 1] for name, values in zip(names, calibration)}
                for row in range(len(calibration[0]))
            )
        try:
            with _without_line_on_stderr(CALIBRATION_NOTICE), warnings.catch_warnings():
                # The calibrator runs TensorFlow's own tf.lite.Interpreter, which warns that it is deprecated.
                warnings.filterwarnings("ignore", message=r"\s*Warning: tf.lite.Interpreter is deprecated")
                return converter.convert()
        except Exception as error:  # the converter raises ConverterError with MLIR diagnostics
            problems = re.findall(r"error: (.*)", str(error)) or [str(error)]
            raise ValueError(f"Model {model.name!r} does not convert to TFLite builtin ops: {problems[0]}") from None


def verify_tflite(content, model, encoder, texts=None, quantization=None, atol=1e-4):
    """Run a `.tflite` model with the LiteRT interpreter on `texts` (default: probe
    texts of the vocabulary plus hostile inputs) and compare with the Keras model.

    Float models must match within `atol`. Quantised models are reported, not
    checked: their argmax agreement is measured on real test sets by the tests.

    Returns:
        `{"quantization", "size_bytes"}` and `compare_with_keras`'s report.

    Raises:
        ValueError: a float model differs by more than `atol`.
    """
    runner = signature_runner(model_content=content)
    report = compare_with_keras(
        lambda **feeds: runner(**feeds)["probabilities"],
        model,
        encoder,
        texts,
        None if quantization else atol,
        "The TFLite model",
    )
    return {"quantization": quantization or "none", "size_bytes": len(content), **report}


def compare_with_keras(run_one, model, encoder, texts, atol, exported_name):
    """Compare an exported model, `run_one(**feeds) -> (1, classes)` probabilities of one text's
    ids, with the Keras `model` on `texts` (default: probe texts of the vocabulary plus hostile
    inputs), one text a call as a device runs it.

    Returns:
        `{"texts", "max_abs_difference", "argmax_agreement", "latency_ms_p50",
        "latency_ms_p99"}` (latency of one text on this machine's CPU).

    Raises:
        ValueError: the largest difference is over `atol` (None: not checked), the message
            naming `exported_name` ("The TFLite model").
    """
    texts = probe_texts(encoder) if texts is None else list(texts)
    encoded = _encoded(encoder, texts)
    expected = keras.ops.convert_to_numpy(model(encoded if len(encoded) > 1 else encoded[0], training=False))
    check_answered(expected, texts, "The Keras model (checked against its export)")
    names = [tensor.name for tensor in model.inputs]
    exported, seconds = [], []
    for row in range(len(texts)):
        feeds = {name: values[row : row + 1] for name, values in zip(names, encoded)}
        start = time.perf_counter()
        exported.append(run_one(**feeds)[0])
        seconds.append(time.perf_counter() - start)
    exported = np.array(exported).reshape(expected.shape)
    difference = float(np.max(np.abs(exported - expected))) if len(texts) else 0.0
    if atol is not None and not difference <= atol:
        raise ValueError(
            f"{exported_name} does not reproduce the Keras model: largest probability difference {difference:.3g} "
            f"(allowed {atol})."
        )
    return {
        "texts": len(texts),
        "max_abs_difference": difference,
        "argmax_agreement": float(np.mean(exported.argmax(-1) == expected.argmax(-1))) if len(texts) else 1.0,
        "latency_ms_p50": float(np.percentile(seconds, 50) * 1000) if seconds else None,
        "latency_ms_p99": float(np.percentile(seconds, 99) * 1000) if seconds else None,
    }


def signature_runner(**model):
    """The LiteRT interpreter's default signature runner of `model_path=` or `model_content=`,
    called as `runner(**feeds) -> {"probabilities": ...}`.

    Its first call runs with the process's stderr (file descriptor 2) captured, and what was
    written there is written back without `XNNPACK_NOTICE`: an INFO line, not a warning, that
    LiteRT's C++ code prints once per process and `TF_CPP_MIN_LOG_LEVEL` does not reach.
    Anything else written meanwhile (a real warning or error) still shows.
    """
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(**model).get_signature_runner()
    called = False

    def call(**feeds):
        nonlocal called
        if called:
            return runner(**feeds)
        called = True
        with _without_line_on_stderr(XNNPACK_NOTICE):
            return runner(**feeds)

    return call


@contextlib.contextmanager
def _without_line_on_stderr(line):
    """Run the block with file descriptor 2 in a temporary file, then write all but `line` back to
    the descriptor, as written (native code's other lines go where they would have gone, not to
    Python's `sys.stderr`)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            dropped = line.encode()
            kept = b"".join(
                written for written in captured.read().splitlines(keepends=True) if written.rstrip(b"\r\n") != dropped
            )
            with os.fdopen(os.dup(2), "wb") as descriptor:  # writes it all, closes only the duplicate
                descriptor.write(kept)
