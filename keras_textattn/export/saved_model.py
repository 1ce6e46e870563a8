"""SavedModel export for TF Serving: raw UTF-8 strings in, class probabilities and names out."""

import json
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_textattn import _backend
from keras_textattn._files import as_paths
from keras_textattn._files import check_output
from keras_textattn._files import write_folder_atomically
from keras_textattn.errors import UserError
from keras_textattn.errors import check_answered
from keras_textattn.errors import check_flag
from keras_textattn.errors import check_long_texts
from keras_textattn.export._disk import full_disk_as_os_error
from keras_textattn.export._float32 import computing_in_float32
from keras_textattn.export._probes import probe_texts
from keras_textattn.export.tflite import labels_record
from keras_textattn.run_folder import class_order
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import run_thresholds
from keras_textattn.text import TextEncoder
from keras_textattn.vocabulary import RESERVED

# The only ops of an exported graph that are not core TensorFlow: the encoder's
# tensorflow-text ops (the regex split only in a hierarchical encoder's sentence split; words
# are split by core ops). TF Serving links tensorflow-text's ops in
# (`@org_tensorflow_text//tensorflow_text:ops_lib` in its model server build).
TENSORFLOW_TEXT_OPS = ("CaseFoldUTF8", "NormalizeUTF8", "RegexSplitWithOffsets")
# What an export writes: `overwrite` replaces a folder holding these alone (`check_output`).
SAVED_MODEL_ENTRIES = frozenset({"saved_model.pb", "fingerprint.pb", "variables", "assets", "assets.extra"})


def saved_model(run, output, *, long_texts="cut", stride=None, overwrite=False):
    """Export a run folder (or an ensemble of them) as a SavedModel for TF Serving.

    Signatures:
        serving_default: `text` string `[None]` (raw UTF-8) -> `probabilities`
            float32 `[None, num_classes]`, `label_id` int32 `[None]`, `label`
            string `[None]` (the class name). A multi-label run's outputs are instead
            `probabilities` float32 `[None, labels]`, `decided` bool `[None, labels]` (the
            label's probability reaches its threshold), `labels` string `[None, labels]` (column
            j: label j's name where decided, else "") and `thresholds` float32 `[None, labels]`
            (the run's, each row alike: every output has the batch dimension, as TF Serving's
            row format, `{"instances": [...]}`, asks).
        token_ids (one run only): the model's own inputs (`token_ids` int32 `[None, length]`,
            `[None, sentences, words]` for HCAN, plus `bigram_ids` of that shape for
            a model with bigrams) -> the same three outputs.

    The text encoder runs inside the graph and its vocabulary is the asset
    `assets/vocabulary.txt`; the class names by id are in `assets.extra/labels.json`.
    The export is written to a temporary folder, verified against the Keras model
    (`verify_saved_model`) and then renamed to `output`. A run trained under a
    mixed-precision policy is exported computing in float32 (`computing_in_float32`).

    Args:
        run: a finished run folder of `keras_textattn.training.train`, or a list of them: an
            ensemble, whose `probabilities` are the mean of the runs' (as `inference.Classifier`
            averages them), each run with its own encoder and vocabulary asset, the classes in
            the first run's order. It has no `token_ids` signature (its runs read other ids).
        output: the SavedModel folder; for TF Serving, `<models>/<name>/<version>`.
        long_texts: what `serving_default` does with a text longer than the model reads: "cut"
            (its start is read) or "windows" (read whole in overlapping windows, each
            classified, its probabilities their mean: `inference.Classifier`'s windows, cut from
            the text's tokens in the graph by `TextEncoder.window_ids`).
        stride: with "windows", tokens (HCAN: sentences) from one window's start to the next's
            (default: half of what the model reads).
        overwrite: replace an earlier export at `output`; otherwise an existing `output` is
            refused, and so is one holding files an export does not write.

    Returns:
        The verification report (see `verify_saved_model`) plus `"path"`.
    """
    _backend.require_tensorflow("SavedModel export")
    check_flag("overwrite", overwrite)
    check_output(output, overwrite, SAVED_MODEL_ENTRIES, source=run)  # before the slow part
    paths = [os.fspath(path) for path in as_paths(run)]
    if not paths:
        raise UserError("no run to export: give a run folder, or a list of them (an ensemble)")
    loaded = [load_run(path) for path in paths]
    label_names = loaded[0][2]
    thresholds = run_thresholds(paths[0], label_names)
    several_multi_label = [path for path, run in zip(paths, loaded) if run_thresholds(path, run[2]) is not None]
    if several_multi_label and len(paths) > 1:
        raise UserError(
            f"an ensemble averages single-label runs; {several_multi_label[0]} is multi-label: export it alone"
        )
    check_long_texts(long_texts, stride, [encoder for _, encoder, _ in loaded])
    windows = (stride,) if long_texts == "windows" else None
    members = [
        (computing_in_float32(model), encoder, class_order(names, label_names, path, paths[0]))
        for path, (model, encoder, names) in zip(paths, loaded)
    ]
    report = {}

    def write(folder):
        with tempfile.TemporaryDirectory() as scratch:
            serving_encoders = [
                _serving_encoder(encoder, os.path.join(scratch, str(index)))
                for index, (_, encoder, _) in enumerate(members)
            ]
            _archive(members, serving_encoders, label_names, thresholds, windows).write_out(folder, verbose=False)
        # The class names by id, for clients that want more than the top label
        # (`keras_textattn.inference`); TF Serving ignores assets.extra/.
        os.makedirs(os.path.join(folder, "assets.extra"))
        with open(os.path.join(folder, "assets.extra", "labels.json"), "w", encoding="utf-8") as handle:
            json.dump(labels_record(paths[0], label_names), handle, ensure_ascii=False)
        report.update(
            _verify(
                folder,
                lambda batch: _mean_probabilities(members, batch, windows=windows),
                label_names,
                probe_texts(members[0][1]),
                thresholds=thresholds,
            )
        )
        report["long_texts"] = long_texts

    with full_disk_as_os_error():
        write_folder_atomically(output, write, SAVED_MODEL_ENTRIES, overwrite)
    return {"path": os.path.abspath(output), **report}


def _mean_probabilities(members, batch, encoders=None, windows=None):
    """The mean over `members` (`(model, encoder, class order)`) of their probabilities for the
    string tensor `batch`, each in the first member's class order (`encoders`: other encoders
    to use, one per member); with `windows` (`(stride,)`), each text's the mean of its windows'."""
    encoders = encoders or [encoder for _, encoder, _ in members]
    return tf.reduce_mean(
        tf.stack(
            [
                tf.gather(_probabilities(model, encoder, batch, windows), order, axis=-1)
                for (model, _, order), encoder in zip(members, encoders)
            ]
        ),
        axis=0,
    )


def _probabilities(model, encoder, batch, windows):
    """`model`'s probabilities for the texts `batch`: of the ids `encoder` gives them, or with
    `windows` (`(stride,)`) the mean over each text's windows (`TextEncoder.window_ids`)."""
    if windows is None:
        return model(encoder(batch), training=False)
    ids, owners = encoder.window_ids(batch, *windows)
    return tf.math.unsorted_segment_mean(model(ids, training=False), owners, tf.shape(batch, out_type=tf.int64)[0])


def _serving_encoder(encoder, folder):
    """A copy of `encoder` that reads its vocabulary from `folder`/vocabulary.txt (written here),
    which the export keeps as an asset: assets/vocabulary.txt (a second, other one
    vocabulary.txt_1, ...)."""
    os.makedirs(folder)
    tokens_file = os.path.join(folder, "vocabulary.txt")
    with open(tokens_file, "w", encoding="utf-8") as handle:
        handle.write("\n".join(encoder.get_vocabulary()[RESERVED:]) + "\n")
    serving_encoder = TextEncoder.from_config(encoder.get_config())
    serving_encoder.set_vocabulary_file(tokens_file)
    serving_encoder.build((None,))
    return serving_encoder


def _archive(members, serving_encoders, label_names, thresholds=None, windows=None):
    labels = tf.constant(label_names)

    def outputs(probabilities):
        if thresholds is not None:
            return multi_label_outputs(probabilities, labels, tf.constant(thresholds, tf.float32))
        label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return {"probabilities": probabilities, "label_id": label_id, "label": tf.gather(labels, label_id)}

    def serve_text(text):
        # A signature does not check its input's shape: a [2, 2] batch would be flattened to 4 texts.
        return outputs(_mean_probabilities(members, tf.ensure_shape(text, [None]), serving_encoders, windows))

    def checked_ids(ids, spec, limit):
        """`ids` of the input `spec`, refused unless every id is in [0, limit)."""
        ids = tf.ensure_shape(ids, spec.shape)
        with tf.control_dependencies(
            [
                tf.debugging.assert_non_negative(ids, message=f"{spec.name} must be >= 0"),
                tf.debugging.assert_less(ids, tf.constant(limit, ids.dtype), message=f"{spec.name} must be < {limit}"),
            ]
        ):
            return tf.identity(ids)

    archive = keras.export.ExportArchive()
    for (model, _, _), serving_encoder in zip(members, serving_encoders):
        archive.track(model)
        archive.track(serving_encoder)
    archive.add_endpoint("serving_default", serve_text, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    if len(members) > 1:
        return archive
    model, encoder, _ = members[0]
    specs = [tf.TensorSpec(tensor.shape, tensor.dtype, name=tensor.name) for tensor in model.inputs]
    limits = [encoder.vocabulary_size(), encoder.bigram_buckets + 1]
    if len(specs) == 1:
        archive.add_endpoint(
            "token_ids",
            lambda token_ids: outputs(model(checked_ids(token_ids, specs[0], limits[0]), training=False)),
            input_signature=specs,
        )
    else:
        archive.add_endpoint(
            "token_ids",
            lambda token_ids, bigram_ids: outputs(
                model(
                    [checked_ids(token_ids, specs[0], limits[0]), checked_ids(bigram_ids, specs[1], limits[1])],
                    training=False,
                )
            ),
            input_signature=specs,
        )
    return archive


def multi_label_outputs(probabilities, labels, thresholds):
    """A multi-label SavedModel's outputs (see `saved_model`) for `probabilities` `[batch, labels]`."""
    rows = tf.shape(probabilities)
    decided = probabilities >= thresholds
    names = tf.where(decided, tf.broadcast_to(labels, rows), tf.constant(""))
    return {
        "probabilities": probabilities,
        "decided": decided,
        "labels": names,
        "thresholds": tf.broadcast_to(thresholds, rows),
    }


def verify_saved_model(folder, model, encoder, label_names, texts=None, atol=1e-5):
    """Check a SavedModel against the Keras model on `texts` (default: probe texts
    of the vocabulary plus empty, invalid UTF-8 and 1 MB strings).

    Returns:
        `{"size_bytes", "max_abs_difference", "texts"}`.

    Raises:
        ValueError: an output differs by more than `atol`, a label is wrong, or
            a shape is not the declared one.
    """
    return _verify(
        folder,
        lambda batch: model(encoder(batch), training=False),
        label_names,
        probe_texts(encoder) if texts is None else texts,
        atol,
    )


def _verify(folder, probabilities, label_names, texts, atol=1e-5, thresholds=None):
    """`verify_saved_model` against `probabilities`, the expected outputs of a string batch (with
    `thresholds`, of a multi-label run: its decided labels too)."""
    texts = list(texts)
    serve = tf.saved_model.load(folder).signatures["serving_default"]
    batch = tf.constant(texts, tf.string)
    exported = {name: value.numpy() for name, value in serve(text=batch).items()}
    expected = keras.ops.convert_to_numpy(probabilities(batch))
    check_answered(expected, texts, "The Keras model (checked against its export)")
    difference = float(np.max(np.abs(exported["probabilities"] - expected))) if len(texts) else 0.0
    if thresholds is None:
        labels = np.array(label_names, dtype=object)[exported["label_id"]]
        named = list(labels) == [label.decode("utf-8") for label in exported["label"]]
    else:
        decided = exported["probabilities"] >= np.asarray(thresholds, np.float32)
        names = np.where(decided, np.array(label_names, dtype=object), "")
        named = np.array_equal(decided, exported["decided"]) and names.tolist() == [
            [name.decode("utf-8") for name in row] for row in exported["labels"]
        ]
    if exported["probabilities"].shape != (len(texts), len(label_names)) or not difference <= atol or not named:
        raise ValueError(
            f"The SavedModel at {folder} does not reproduce the Keras model: largest probability "
            f"difference {difference:.3g} (allowed {atol}), output shape {exported['probabilities'].shape}."
        )
    size = sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(folder) for name in names)
    return {"size_bytes": size, "max_abs_difference": difference, "texts": len(texts)}


def saved_model_ops(folder):
    """The names of all ops in a SavedModel's graphs and functions (sorted)."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(folder, "saved_model.pb"), "rb") as handle:
        proto.ParseFromString(handle.read())
    ops = set()
    for graph in proto.meta_graphs:
        ops.update(node.op for node in graph.graph_def.node)
        for function in graph.graph_def.library.function:
            ops.update(node.op for node in function.node_def)
    return sorted(ops)
