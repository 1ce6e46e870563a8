"""What a run folder is, and how to read, write, lock and replace one (TensorFlow backend).

A run folder, written by `keras_textattn.training.train` (and `tune`'s `best/`):
    run.json         the run's arguments, written first: a resume must repeat them
    model.keras      the token-id classifier (`keras.models.load_model`, no custom_objects)
    encoder.keras    the fitted `TextEncoder` (its vocabulary is an asset of the file)
    vocabulary.txt   one token per line, line i is id i
    labels.json      class names, index = label id
    history.csv      loss, accuracy and seconds per epoch (rows of retrained epochs dropped)
    metrics.json     written last: a run folder with it is finished; `versions`: the
                     keras-textattn, Keras and TensorFlow that wrote it; `multi_label`: a multi-label
                     run's thresholds, one per label (`run_thresholds`)
    logs/            TensorBoard
    backup/          checkpoints while the run is unfinished
    candidates/      with `--model auto`: each raced model's run folder (the best is copied here)

Export, explain and tuning read run folders through this module; none of them needs
the training code.
"""

import contextlib
import hashlib
import json
import os
import shutil
import warnings
import zipfile

import keras
import tensorflow as tf

import keras_textattn.text  # TextEncoder (importing it registers the class encoder.keras holds)
from keras_textattn import __version__
from keras_textattn import _backend
from keras_textattn._files import lock_holder
from keras_textattn._files import write_atomically
from keras_textattn._files import write_text
from keras_textattn.datasets.splits import checked_label_names
from keras_textattn.errors import UserError
from keras_textattn_config.checks import RunError  # noqa: F401 (re-exported: keras_textattn.training)

CANDIDATES_FOLDER = "candidates"
# Where an unfinished run keeps the token ids of the splits whose ids do not fit in memory (or
# that are streamed), encoded once; removed when the run is finished.
IDS_FOLDER = "ids"
RUN_FILES = frozenset(
    {
        "run.json",
        "model.keras",
        "encoder.keras",
        "vocabulary.txt",
        "labels.json",
        "history.csv",
        "metrics.json",
        "logs",
        "backup",
        IDS_FOLDER,
        CANDIDATES_FOLDER,
    }
)
FINISHED_MARKER = "metrics.json"


def is_finished(folder):
    return os.path.isfile(os.path.join(folder, FINISHED_MARKER))


def foreign_entries(folder):
    """The entries of `folder` that a run folder never holds (temporary files of ours aside)."""
    return sorted(name for name in os.listdir(folder) if name not in RUN_FILES and not name.startswith(".tmp-"))


def remove_temporary_files(folder):
    """Delete the `.tmp-*` files an interrupted atomic write left in `folder`."""
    for name in os.listdir(folder):
        if name.startswith(".tmp-"):
            path = os.path.join(folder, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def _aside_path(folder):
    parent, name = os.path.split(os.path.abspath(folder))
    return os.path.join(parent, f".replaced-{name}")


def recover_replacement(folder):
    """Finish or roll back a replacement of `folder` that a killed process left halfway.

    `replace_aside` moves a run folder to `.replaced-<name>` beside it while a new run
    is written in its place. If the new run finished, the old copy is deleted; if not,
    the half-written new run is deleted and the old one moved back. Returns what was
    done: None, "finished" or "rolled back".
    """
    aside = _aside_path(folder)
    if not os.path.isdir(aside):
        return None
    if is_finished(folder):
        shutil.rmtree(aside)
        return "finished"
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.replace(aside, folder)
    return "rolled back"


def _check_vocabulary(folder, paths, encoder):
    """A `RunError` where encoder.keras's vocabulary is not the one the run trained with: another
    digest than metrics.json's (runs saved before it was recorded: no check), or another list than
    vocabulary.txt's (two tokens swapped changed most predictions, silently)."""
    recorded = read_json(paths["metrics.json"]).get("vocabulary_sha256")
    vocabulary = encoder.get_vocabulary()
    listed_path = os.path.join(folder, "vocabulary.txt")
    listed = None
    if os.path.isfile(listed_path):
        with open(listed_path, encoding="utf-8", newline="\n") as handle:
            listed = handle.read().split("\n")[: len(vocabulary)]
    if recorded not in (None, vocabulary_digest(vocabulary)) or listed not in (None, vocabulary):
        where = next((i for i, (a, b) in enumerate(zip(vocabulary, listed or [])) if a != b), None)
        differs = (
            f"; id {where} is {vocabulary[where]!r} there, {listed[where]!r} in vocabulary.txt"
            if where is not None
            else ""
        )
        raise RunError(
            f"{paths['encoder.keras']} holds another vocabulary than the one this run trained with (metrics.json's "
            f"digest, vocabulary.txt){differs}: a file of the run was changed; use the run folder as train wrote it"
        )


def _replacement_said(folder, aside):
    """Why the run at `folder` cannot be read while `replace_aside` has its previous run at `aside`."""
    holder = lock_holder(folder)
    if holder:
        pid, started = holder
        return (
            f"{folder} is being replaced by process {pid} (train --overwrite, started {started}); the previous "
            f"run is kept in {aside} until it finishes: give --run {aside} to use it meanwhile"
        )
    return (
        f"{folder} holds a replacement that was interrupted (killed); the previous run is kept in {aside}: "
        f"give --run {aside} to use it, or run the train command again, which puts it back first"
    )


@contextlib.contextmanager
def replace_aside(folder):
    """Move the run folder `folder` aside while the block writes a new one in its place.

    The old folder is deleted when the block ends normally; if it raises (an error,
    Ctrl-C), the new folder is deleted and the old one restored. After a kill,
    `recover_replacement` (run by the next `train` on the folder) does the same.
    """
    aside = _aside_path(folder)
    os.replace(folder, aside)
    try:
        yield
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(aside, folder)
        raise
    shutil.rmtree(aside)


def read_json(path):
    """A JSON file of a run folder; a `RunError` naming the file if it is unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (ValueError, UnicodeDecodeError) as error:
        raise RunError(f"{path} is not valid JSON ({error}); the file is damaged") from None


def save_encoder(path, encoder):
    """Write a fitted encoder as a `.keras` file (a string-input model around it)."""
    text = keras.Input(shape=(), dtype="string", name="text")
    write_atomically(path, keras.Model(text, encoder(text), name="encoder").save)


@contextlib.contextmanager
def without_optimizer_state_warning():
    """Silence Keras's "Skipping variable loading for optimizer" while loading trained weights into
    a model whose optimizer does not match the saved one (a keras-tuner trial's checkpoint; a
    mixed_float16 run saved before `compile_classifier` named its loss-scale optimizer): the optimizer
    state is not needed to predict, evaluate or export."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
        yield


def _load_keras_file(path):
    if not zipfile.is_zipfile(path):
        raise RunError(f"{path} is damaged: not a complete .keras file (was its writing interrupted?)")
    try:
        with without_optimizer_state_warning():
            return keras.models.load_model(path, safe_mode=True)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RunError(f"{path} could not be loaded: {first}") from None
    except TypeError:  # safe mode's refusal of a class or function it does not know, deep in Keras
        raise RunError(
            f"{path} is unsafe or damaged: it names classes or functions that are neither Keras's nor "
            "keras-textattn's, so it was not loaded (nothing in it ran); use the run folder as train wrote it"
        ) from None


def load_encoder(path):
    """The `TextEncoder` of a file written by `save_encoder` (safe mode); TensorFlow backend only,
    said before loading (Keras would wrap TextEncoder's own refusal in its deserialisation error)."""
    _backend.require_tensorflow(f"The TextEncoder of {path}")
    return _load_keras_file(path).layers[-1]


def save_run(folder, model, encoder, label_names, metrics):
    """Write the files of a finished run folder (see the module docstring) for a token-id
    `model` and its fitted `encoder`. Each file is written atomically, metrics.json last:
    its presence marks the run finished. metrics.json holds `metrics` and `versions`."""
    label_names = _check_run_parts(model, encoder, label_names, metrics)
    versions = {"keras_textattn": __version__, "keras": keras.__version__, "tensorflow": tf.__version__}
    os.makedirs(folder, exist_ok=True)
    save_encoder(os.path.join(folder, "encoder.keras"), encoder)
    write_atomically(os.path.join(folder, "model.keras"), model.save)
    vocabulary = encoder.get_vocabulary()
    write_text(os.path.join(folder, "vocabulary.txt"), "\n".join(vocabulary) + "\n")
    write_text(os.path.join(folder, "labels.json"), json.dumps(list(label_names), indent=2))
    metrics = {**metrics, "versions": versions, "vocabulary_sha256": vocabulary_digest(vocabulary)}
    write_text(os.path.join(folder, "metrics.json"), json.dumps(metrics, indent=2, sort_keys=True))


def vocabulary_digest(vocabulary):
    """The SHA-256 of a vocabulary (its tokens in id order): metrics.json records it, and `load_run`
    checks encoder.keras against it."""
    return hashlib.sha256("\n".join(vocabulary).encode("utf-8")).hexdigest()


def _check_run_parts(model, encoder, label_names, metrics):
    """`label_names` as a list, after checking that `save_run`'s parts make a run `load_run` reads
    (a `UserError` saying which does not, before anything is written)."""
    if not isinstance(model, keras.Model):
        raise UserError(f"save_run: `model` must be a Keras model; got {type(model).__name__}")
    if not isinstance(encoder, keras_textattn.text.TextEncoder):
        raise UserError(f"save_run: `encoder` must be the model's TextEncoder; got {type(encoder).__name__}")
    if not encoder.is_adapted:
        raise UserError("save_run: `encoder` has no vocabulary (adapt it to the training texts first)")
    if not isinstance(metrics, dict):
        raise UserError(f"save_run: `metrics` must be a dict (metrics.json); got {type(metrics).__name__}")
    label_names = checked_label_names(label_names)
    try:
        classes, embedded = _classes_and_embedded(model)
    except (AttributeError, ValueError):  # load_run reads the classes from the saved model's outputs
        raise UserError(
            f"save_run: `model` must have defined inputs and outputs (a functional model, as the builders "
            f"make, or a Sequential one given its Input); {model.name!r} has none"
        ) from None
    if len(label_names) != classes:
        raise UserError(f"save_run: {len(label_names)} label names for a model of {classes} outputs: {label_names}")
    if embedded not in (None, encoder.vocabulary_size()):
        raise UserError(
            f"save_run: the encoder has a vocabulary of {encoder.vocabulary_size()} tokens, but the model "
            f"embeds {embedded}: they do not belong together"
        )
    return label_names


def _classes_and_embedded(model):
    """The classes `model` outputs, and the tokens its token embedding (the layer every builder
    names "embedding") takes, or None without one: what a run's labels and encoder must match."""
    embeddings = [layer for layer in model.layers if layer.name == "embedding"]
    return model.outputs[0].shape[-1], embeddings[0].input_dim if embeddings else None


def class_order(names, first_names, path, first_path):
    """Column indices that put the classes `names` of the run at `path` in the order
    `first_names` of the run at `first_path` (an ensemble's first member); a `UserError` if the
    two runs were trained on other classes."""
    if sorted(names) != sorted(first_names):
        raise UserError(
            f"an ensemble averages runs trained on the same classes: {path} has {names}, {first_path} has {first_names}"
        )
    return [names.index(name) for name in first_names]


def load_run(folder):
    """`(model, encoder, label_names)` of a finished run folder.

    Both `.keras` files load in Keras's safe mode (no code is deserialised); the model is
    compiled as it was trained, except that the optimizer state of a run trained under
    mixed_float16 is not restored (Keras rebuilds a plain optimizer for its loss-scale
    optimizer's variables), which predicting, evaluating and exporting do not need. The parts
    are checked against each other: labels.json must be a list of as many names as the
    model has outputs, and the encoder's vocabulary must fit the model's embedding.
    Any mismatch or damaged file raises a `RunError` naming the file.
    """
    folder = os.fspath(folder)
    paths = {
        name: os.path.join(folder, name) for name in ("model.keras", "encoder.keras", "labels.json", "metrics.json")
    }
    if os.path.isfile(folder):
        parent = os.path.dirname(folder) or "."  # the run folder when `folder` is one of its files
        raise RunError(
            f"{folder} is a file, not a run folder; give the run folder"
            + (
                f" (the folder that holds {os.path.basename(folder)}: {parent}?)"
                if os.path.basename(folder) in paths
                else ""
            )
        )
    aside = _aside_path(folder)
    if os.path.isdir(aside) and not is_finished(folder):
        raise RunError(_replacement_said(folder, aside))
    missing = [name for name, path in paths.items() if not os.path.exists(path)]
    exported = {"saved_model.pb": "SavedModel", "model.tflite": "TFLite model"}
    for name, kind in exported.items():
        if missing and os.path.exists(os.path.join(folder, name)):
            raise RunError(
                f"{folder} is an exported {kind}, which keeps only the predictions; give the run folder "
                "it was exported from"
            )
    if missing and os.path.exists(os.path.join(folder, "search.json")):
        best = os.path.join(folder, "best")
        raise RunError(
            f"{folder} is a search folder (keras-textattn tune); "
            + (
                f"its best model is the run folder {best}"
                if os.path.isdir(best)
                else "it holds no best model: the search has not finished, or no trial of it has"
            )
        )
    if missing:
        raise RunError(f"{folder} is not a finished run folder: missing {', '.join(missing)}")
    model = _load_keras_file(paths["model.keras"])
    encoder = load_encoder(paths["encoder.keras"])
    label_names = read_json(paths["labels.json"])
    classes, embedded = _classes_and_embedded(model)
    if not (isinstance(label_names, list) and all(isinstance(n, str) for n in label_names)):
        raise RunError(f"{paths['labels.json']} must be a list of class names (strings); found {label_names!r:.80}")
    if len(label_names) != classes:
        raise RunError(
            f"{paths['labels.json']} names {len(label_names)} classes, but model.keras has {classes} outputs"
        )
    if embedded not in (None, encoder.vocabulary_size()):
        raise RunError(
            f"{paths['encoder.keras']} has a vocabulary of {encoder.vocabulary_size()} tokens, but "
            f"model.keras embeds {embedded}: the files do not belong together"
        )
    _check_vocabulary(folder, paths, encoder)  # of the right size, but the same tokens?
    return model, encoder, label_names


def run_thresholds(folder, label_names):
    """The decision thresholds of a multi-label run (metrics.json's `multi_label`), one per name of
    `label_names` in that order; None for a single-label run. A damaged record is a `RunError`."""
    path = os.path.join(os.fspath(folder), FINISHED_MARKER)
    record = read_json(path).get("multi_label")
    if record is None:
        return None
    thresholds = record.get("thresholds") if isinstance(record, dict) else None
    if not (
        isinstance(thresholds, dict)
        and sorted(thresholds) == sorted(label_names)
        and all(isinstance(t, (int, float)) and 0 <= t <= 1 for t in thresholds.values())
    ):
        raise RunError(
            f"{path}: multi_label.thresholds must give each label a threshold in [0, 1]; found {thresholds!r:.80}"
        )
    return [float(thresholds[name]) for name in label_names]
