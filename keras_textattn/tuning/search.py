"""`tune()`: a keras-tuner search over a paper model, from a tuner config (TensorFlow backend)."""

import csv
import dataclasses
import functools
import glob
import json
import os
import shutil
import time

import keras
import keras_tuner
import numpy as np
import tensorflow as tf

from keras_textattn import _backend
from keras_textattn._files import NO_SPACE_ERRNOS
from keras_textattn._files import check_path
from keras_textattn._files import write_atomically
from keras_textattn._files import write_text
from keras_textattn.datasets import check_class_weight
from keras_textattn.datasets import inference_batch_size
from keras_textattn.datasets import load_labelled_data
from keras_textattn.datasets import make_batches
from keras_textattn.datasets import sample_rows
from keras_textattn.errors import UserError
from keras_textattn.errors import check_whole
from keras_textattn.models import build_model
from keras_textattn.models import get_spec
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import load_encoder
from keras_textattn.run_folder import read_json
from keras_textattn.run_folder import save_encoder
from keras_textattn.run_folder import save_run
from keras_textattn.run_folder import without_optimizer_state_warning
from keras_textattn.text import TextEncoder
from keras_textattn.text.vectors import PACKAGED_VECTORS
from keras_textattn.text.vectors import coverage
from keras_textattn.text.vectors import initial_embedding
from keras_textattn.text.vectors import vectors_dimension
from keras_textattn.text.vectors import vectors_words
from keras_textattn.training import RoomForCheckpoints
from keras_textattn.training import StopOnDivergence
from keras_textattn.training import check_embeddings
from keras_textattn.training import check_preset
from keras_textattn.training import choose_lengths_saying_so
from keras_textattn.training import compile_classifier
from keras_textattn.training import schedule_callbacks
from keras_textattn.training.model_setup import class_weights_of
from keras_textattn.training.model_setup import predictions
from keras_textattn.training.model_setup import scored_rows
from keras_textattn.training.model_setup import split_scores
from keras_textattn.tuning.config import ENCODER_HYPERPARAMETERS
from keras_textattn.tuning.config import TRAINING_HYPERPARAMETERS
from keras_textattn.tuning.config import TuningConfig
from keras_textattn.tuning.config import load_config
from keras_textattn.vocabulary import OOV_ID
from keras_textattn_config.train_config import ADAPT_ROWS
from keras_textattn_config.train_config import RANDOM_EMBEDDINGS
from keras_textattn_config.train_config import SEARCH_DATA_OPTIONS
from keras_textattn_config.train_config import SEARCH_TRIAL_OPTIONS
from keras_textattn_config.train_config import TrainConfig
from keras_textattn_config.train_config import options_said


class SearchSpaceError(UserError, keras_tuner.errors.FatalValueError):
    """Hyperparameter values the model cannot be built with: one line on the command line (a
    `UserError`), and the end of the search (keras-tuner's `FatalError`), where any other error
    would fail the trial and the search go on to the next, until three in a row had failed."""


class DiskFullError(OSError, keras_tuner.errors.FatalError):
    """A full disk (ENOSPC) or a used-up disk quota (EDQUOT) in a trial: it ends the search,
    where keras-tuner would fail every trial after it in turn."""


class TextAttentionHyperModel(keras_tuner.HyperModel):
    """A paper model whose builder arguments come from a `TuningConfig`'s search space.

    The encoder is fitted once, outside the search: every trial builds on its
    vocabulary size and sequence shape. `learning_rate` is the Adam learning rate;
    `max_tokens` keeps that many of the encoder's most frequent ids (padding and OOV
    included) and reads the others as OOV, which is what an encoder adapted with
    `max_tokens` would give (`TextEncoder.cut_vocabulary`); a flat model's
    `sequence_length` keeps the first that many ids of each text, which is what an encoder
    of that length gives (`TextEncoder.cut_length`); every other hyperparameter is a
    builder argument. `dtype_policy`: the models' Keras dtype policy (None: the
    global one). `multi_label`: a sigmoid per label, trained with the binary cross-entropy, its
    labels' positive and negative rows weighed by `label_weights` where given (`class_weights_of`).
    `embedding_rows(size)`, None until `tune` sets it after `check_space` (making
    the rows can mean training word2vec): the initial token embedding of that size for the
    encoder's whole vocabulary, and which ids have a vector (`config.embeddings` says where
    it comes from); each trial starts from the first rows (those of its vocabulary), frozen
    as `freeze_embeddings` (searched or fixed) says.
    """

    def __init__(self, config, num_classes, encoder, dtype_policy=None, multi_label=False, label_weights=None):
        super().__init__(name=config.model)
        self.config = config
        self.num_classes = num_classes
        self.multi_label = multi_label
        self.label_weights = label_weights
        self.encoder = encoder
        self.dtype_policy = dtype_policy
        self.embedding_rows = None

    def declare(self, hp):
        """Declare the config's hyperparameters on `hp`; returns `{name: value}`."""
        values = {}
        for name, spec in self.config.hyperparameters.items():
            if spec["type"] == "int":
                values[name] = hp.Int(
                    name,
                    spec["min"],
                    spec["max"],
                    step=spec.get("step"),
                    sampling=spec.get("sampling", "linear"),
                    default=spec["default"],
                )
            elif spec["type"] == "float":
                values[name] = hp.Float(
                    name,
                    spec["min"],
                    spec["max"],
                    step=spec.get("step"),
                    sampling=spec.get("sampling", "linear"),
                    default=spec["default"],
                )
            elif spec["type"] == "choice" and isinstance(spec["values"][0], list):
                # keras-tuner chooses among scalars: list values (e.g. layer sizes) travel as JSON.
                choice = hp.Choice(name, [json.dumps(v) for v in spec["values"]], default=json.dumps(spec["default"]))
                values[name] = json.loads(choice)
            elif spec["type"] == "choice":
                values[name] = hp.Choice(name, spec["values"], default=spec["default"])
            else:
                values[name] = hp.Boolean(name, default=spec["default"])
        return values

    def vocabulary_size(self, hp):
        """The trial's vocabulary: its `max_tokens` when searched, at most the encoder's."""
        full = self.encoder.vocabulary_size()
        return min(hp.values.get("max_tokens") or full, full)

    def sequence_length(self, hp):
        """The trial's tokens per text: its `sequence_length` when searched, else the encoder's."""
        return hp.values.get("sequence_length") or self.encoder.sequence_length

    def trial_encoder(self, hp):
        """The encoder that gives the ids the trial reads (the encoder cut to its vocabulary
        and length)."""
        encoder = self.encoder
        if self.vocabulary_size(hp) < encoder.vocabulary_size():
            encoder = encoder.cut_vocabulary(self.vocabulary_size(hp))
        if self.sequence_length(hp) < encoder.sequence_length:
            encoder = encoder.cut_length(self.sequence_length(hp))
        return encoder

    def build(self, hp):
        values = {**_preset_arguments(self.config), **self.declare(hp)}
        try:
            model = build_model(
                self.config.model,
                self.num_classes,
                dtype_policy=self.dtype_policy,
                multi_label=self.multi_label,
                vocabulary_size=self.vocabulary_size(hp),
                **{
                    **get_spec(self.config.model).shape_arguments(self.encoder),
                    "sequence_length": self.sequence_length(hp),
                },
                **_builder_arguments(values),
            )
        except ValueError as error:  # a value the builder or a layer refuses, e.g. 0 heads
            given = [f"{name} {value} (fixed)" for name, value in self.config.fixed.items()]
            given += [
                f"{name} {value}" for name, value in hp.values.items() if name in self.config.hyperparameters
            ]  # not hyperband's tuner/epochs and such
            raise SearchSpaceError(
                f"{self.config.path}: {self.config.model} cannot be built with {', '.join(given)}: "
                f"{str(error).splitlines()[0]} (narrow the config's ranges or fixed values)"
            ) from error
        if self.embedding_rows is not None:
            layer = model.get_layer("embedding")
            rows, _ = self.embedding_rows(layer.output_dim)
            layer.embeddings.assign(rows[: self.vocabulary_size(hp)])
            layer.trainable = not self.frozen(values)
        optimizer = keras.optimizers.Adam(self.learning_rate(hp))
        compile_classifier(model, optimizer, multi_label=self.multi_label, label_weights=self.label_weights)
        return model

    def learning_rate(self, hp):
        """The trial's Adam learning rate: searched, else the config's fixed one, else 1e-3."""
        return {**self.config.fixed, **hp.values}.get("learning_rate", 1e-3)

    def check_space(self):
        """Build the model at the defaults, then with each searched hyperparameter at each end
        of its range (every value of a choice or boolean), the others at their defaults: a
        value the builder refuses is a `SearchSpaceError` before the search begins, not a
        failed trial hours into it. Values refused only together (HCAN's heads must divide its
        width) end the search with that error when a trial draws them."""
        declared = keras_tuner.HyperParameters()
        self.declare(declared)
        ends = [(None, None)]
        for space in declared.space:  # keras-tuner's own ends: the values a trial can draw
            categorical = self.config.hyperparameters[space.name]["type"] in ("choice", "boolean")
            ends += [
                (space.name, value)
                for value in (space.values if categorical else (space.prob_to_value(0.0), space.prob_to_value(1.0)))
            ]
        for name, value in ends:
            hp = keras_tuner.HyperParameters()
            self.declare(hp)
            if name is not None:
                hp.values[name] = value
            self.build(hp)

    def frozen(self, values):
        """Whether a trial with these hyperparameter values keeps its embedding fixed."""
        return bool(values.get("freeze_embeddings", self.config.embeddings and self.config.embeddings["frozen"]))

    def fit(self, hp, model, x, *args, validation_data=None, **kwargs):
        """`model.fit`, on batches whose token ids beyond the trial's vocabulary read as OOV and
        whose texts are cut to the trial's length, with the config's learning-rate schedule from
        the trial's rate; a trial whose training diverges fails (`_failed_trial`), and one whose best-epoch
        checkpoint would not fit on the disk stops first (`RoomForCheckpoints`)."""
        rate = self.learning_rate(hp)
        callbacks = kwargs.get("callbacks") or []
        # keras-tuner's checkpoint of the trial's best epoch (`SaveBestEpoch`) names its file `filepath`.
        checkpoints = [c.filepath for c in callbacks if str(getattr(c, "filepath", "")).endswith(".weights.h5")]
        kwargs["callbacks"] = [
            StopOnDivergence(functools.partial(_failed_trial, learning_rate=rate)),
            RoomForCheckpoints(checkpoints),
            *callbacks,
            *schedule_callbacks(self.config.lr_schedule, rate, kwargs.get("epochs", self.config.epochs)),
        ]
        size, length = self.vocabulary_size(hp), self.sequence_length(hp)
        if size < self.encoder.vocabulary_size() or length < self.encoder.sequence_length:
            x, validation_data = (
                None if batches is None else batches.map(lambda ids, labels: (_cut(ids, size, length), labels))
                for batches in (x, validation_data)
            )
        if not model.optimizer.built:  # as train() builds it: the training step is then traced once, not twice
            model.optimizer.build(model.trainable_variables)  # (after keras-tuner loaded a hyperband parent's weights)
        return model.fit(x, *args, validation_data=validation_data, **kwargs)


def _failed_trial(epoch, what, learning_rate):
    """keras-tuner's `FailedTrialError` for a trial that diverged: a model of NaN weights scores at
    chance, and was saved as the best model when every trial had diverged."""
    return keras_tuner.errors.FailedTrialError(
        f"training diverged in epoch {epoch + 1}: {what}; a lower learning_rate "
        f"(this trial's: {learning_rate:g}) trains stably"
    )


def _preset_arguments(config):
    """The builder arguments a trial takes before its searched ones: the config's preset's,
    then its `fixed` ones."""
    return {**get_spec(config.model).preset_arguments(config.preset), **config.fixed}


def _builder_arguments(values):
    """The hyperparameter values that are builder arguments (not training or encoder settings)."""
    return {
        name: value for name, value in values.items() if name not in TRAINING_HYPERPARAMETERS + ENCODER_HYPERPARAMETERS
    }


def _cut(ids, size, length):
    """Batched flat or hierarchical encoder output (token ids, or token and bigram ids) with token
    ids >= `size` made OOV and each text's (a flat text's) first `length` ids kept."""
    if isinstance(ids, tuple):  # bigram ids are hashed, not looked up: no vocabulary to cut
        return (_cut(ids[0], size, length), _first_columns(ids[1], length))
    ids = _first_columns(ids, length)
    return tf.where(ids >= size, tf.constant(OOV_ID, ids.dtype), ids)


def _first_columns(ids, length):
    """A flat batch's first `length` ids of each text; a hierarchical batch (whose length is not
    searched) as it is."""
    return ids[:, :length] if ids.shape.rank == 2 else ids


class _TimedTrials:
    """Adds each trial's training wall time (`seconds`) and the epochs its model trained
    (`epochs`, from the first: a hyperband trial continues its parent's model) to its
    metrics. They are set on every epoch of the histories, so they survive
    keras-tuner's reduction to the best epoch and reach the chief with the trial.
    After each trial, a copy of keras-tuner's state files (`_keep_good_state`), and the error of
    a trial that failed in one line; a full disk ends the search (`DiskFullError`)."""

    def search(self, *args, verbose=1, **kwargs):
        self.verbose = verbose
        super().search(*args, verbose=verbose, **kwargs)

    def on_trial_end(self, trial):
        if trial.status == "FAILED" and self.verbose:  # in one line, after keras-tuner's traceback
            print(f"This trial failed: {last_error(trial.message)}")
        super().on_trial_end(trial)
        _keep_good_state(self.project_dir)

    def run_trial(self, trial, *args, **kwargs):
        start = time.perf_counter()
        try:
            histories = super().run_trial(trial, *args, **kwargs)
        except OSError as error:
            if error.errno not in NO_SPACE_ERRNOS:
                raise
            raise DiskFullError(error.errno, error.strerror, error.filename) from None
        seconds = time.perf_counter() - start
        for history in histories:
            epochs = len(history.epoch)
            history.history["seconds"] = [seconds] * epochs
            # Counted from epoch 0: a continued hyperband trial's history starts at its `initial_epoch`.
            history.history["epochs"] = [float(history.epoch[-1] + 1)] * epochs if epochs else []
        return histories


def last_error(message):
    """The error that ends a keras-tuner message holding a traceback, without its class name."""
    return message.strip().splitlines()[-1].split(": ", 1)[-1]


TUNER_CLASSES = {
    kind: type(f"Timed{cls.__name__}", (_TimedTrials, cls), {})
    for kind, cls in (
        ("random", keras_tuner.RandomSearch),
        ("bayesian", keras_tuner.BayesianOptimization),
        ("hyperband", keras_tuner.Hyperband),
    )
}


def _state_files(project):
    """keras-tuner's state files, the oracle's last."""
    return sorted(glob.glob(os.path.join(project, "tuner*.json"))) + glob.glob(os.path.join(project, "oracle.json"))


def _keep_good_state(project):
    """Copy keras-tuner's state files (written in place, so a kill can leave one cut short)
    to `<file>.good`, atomically, the oracle's last: oracle.json.good, what `_repair_cut_writes`
    goes by, then comes with the tuner's file, without which keras-tuner does not reload the
    oracle (a kill between the two copies left oracle.json.good alone, and the rerun repeated
    the finished trials)."""
    for path in _state_files(project):
        with open(path, encoding="utf-8") as handle:
            write_text(path + ".good", handle.read())


def _readable_json(path):
    try:
        with open(path, encoding="utf-8") as handle:
            json.load(handle)
        return True
    except (OSError, ValueError):
        return False


def _repair_cut_writes(project):
    """Undo what a kill in the middle of keras-tuner's writes left: when a state or trial file
    is not valid JSON, the state of the last finished trial (`_keep_good_state`) comes back and
    the trials begun after it are removed (they run again); with no finished trial, the search
    starts over."""
    trials = glob.glob(os.path.join(project, "trial_*", "trial.json"))
    if all(_readable_json(path) for path in _state_files(project) + trials):
        return
    if not os.path.exists(os.path.join(project, "oracle.json.good")):
        shutil.rmtree(project)
        return
    for path in glob.glob(os.path.join(project, "*.json")):
        os.remove(path)
    for good in glob.glob(os.path.join(project, "*.json.good")):
        shutil.copyfile(good, good[: -len(".good")])
    with open(os.path.join(project, "oracle.json"), encoding="utf-8") as handle:
        started = set(json.load(handle)["start_order"])
    for path in trials:
        folder = os.path.dirname(path)
        if os.path.basename(folder)[len("trial_") :] not in started or not _readable_json(path):
            shutil.rmtree(folder)


def make_tuner(kind, hypermodel, config, directory, max_trials):
    """A keras-tuner tuner (`kind`: a key of `TUNER_CLASSES`) that resumes from
    `directory` (`overwrite=False`) and times its trials."""
    project = os.path.join(directory, config.model)
    if os.path.isdir(project):
        _repair_cut_writes(project)
    objective = keras_tuner.Objective(config.objective, direction=config.direction)
    options = dict(
        objective=objective,
        directory=directory,
        project_name=config.model,
        overwrite=False,
        seed=config.seed,
        executions_per_trial=config.executions_per_trial,
    )
    if kind == "hyperband":
        return TUNER_CLASSES[kind](hypermodel, max_epochs=config.epochs, **options)
    return TUNER_CLASSES[kind](hypermodel, max_trials=max_trials, **options)


# The options of a `TrainConfig` that a search takes: how the data is read, and what every trial
# trains with (the rest of a trial's training is the tuner config's).
DATA_OPTIONS = tuple(sorted(SEARCH_DATA_OPTIONS))
TRIAL_OPTIONS = SEARCH_TRIAL_OPTIONS


def tune(
    config, data, directory, *, tuner="random", preset=None, max_trials=None, epochs=None, train_config=None, **options
):
    """Search a tuner config's space on `data`; write the trials table and the best model.

    Writes into `directory`:
        search.json             the search space: a rerun with another config is refused
        encoder.keras           the encoder, fitted once (reused when the search resumes)
        embeddings-<size>.npz   with `embeddings`: the trials' initial token embedding,
                                made once per size (reused when the search resumes)
        <model>/                keras-tuner's state: rerunning the same call resumes the
                                search and skips finished trials
        trials.csv, trials.md   one row per finished trial: hyperparameters, score,
                                epochs, seconds; best first; then any failed trial,
                                with why (`failed`)
        best/                   the best trial's model as a run folder (`load_run`,
                                `keras-textattn export --run`)

    A trial whose training diverges (its loss, or its weights, no longer numbers) fails, saying
    so in one line, and is never the best; three failed trials in a row (keras-tuner's limit)
    stop the search with a `RunError`.

    Distributed search: start the same call in several processes with keras-tuner's
    `KERASTUNER_TUNER_ID` ("chief" for the oracle, "tuner0", ... for workers),
    `KERASTUNER_ORACLE_IP` and `KERASTUNER_ORACLE_PORT`. The chief only serves the
    oracle; the workers train; the chief writes the table and the best model.

    Args:
        config: a tuner config: a path, the name of a shipped one, a dict of its keys
            (`load_config`), or a loaded `TuningConfig`.
        data: as for `keras_textattn.training.train`.
        train_config, **options: a `TrainConfig`, and its fields as keywords (which win), of which
            a search takes the data options (`DATA_OPTIONS`: how `data` is read, as for `train`)
            and what every trial trains with (`TRIAL_OPTIONS`, below); any other option given is
            a `RunError`, as is a name that is no option.
        tuner: "random", "bayesian" or "hyperband". Hyperband trains trials for 1 to `epochs`
            epochs and continues the better ones from their weights; how many trials it runs
            follows from `epochs`, so it takes no `max_trials`.
        preset, max_trials, epochs: override the config's. The preset ("cpu", the
            default, or "paper") gives the builder arguments the config neither fixes
            nor searches, as for `train`, and the learning-rate schedule unless the
            config's `tuner.lr_schedule` gives one (scalable attention's cpu preset:
            cosine); the other training settings stay the config's.
        The trial options:
        class_weight: "balanced" or `{class name: weight}`, as for `train`.
        dtype_policy: "mixed_float16" or "mixed_bfloat16" for GPUs and TPUs, as for
            `train` (None: Keras's global policy); recorded in best/metrics.json.
        embeddings: every trial's token embedding starts from these vectors, as for
            `train`: "word2vec" (trained on the training split once per embedding size
            searched) or a GloVe / word2vec / fastText `.vec` file (plain or gzip) whose
            dimension is the embedding size the config fixes (or the builder's default).
            Coverage is recorded in best/metrics.json.
        freeze_embeddings: keep them fixed in every trial; or search it with a boolean
            `freeze_embeddings` hyperparameter in the config.
        vectors_vocabulary: with vectors `embeddings`, as for `train`: the words of the vectors'
            first this many that the vocabulary lacks join it, with their vectors (not with a
            searched `max_tokens`, whose trials cut the one vocabulary).
        verbose: as for `train`.

    Returns:
        The rows of the trials table, best first.
    """
    _backend.require_tensorflow("Hyperparameter search")
    options = _search_options(train_config, options)
    verbose = options.verbose
    config = config if isinstance(config, TuningConfig) else load_config(config)
    _check_search(tuner, max_trials, epochs, directory)
    _set_search(config, tuner, preset, max_trials, epochs, verbose)
    config.embeddings = _embeddings_setting(
        config,
        options.embeddings,
        options.freeze_embeddings,  # before the data
        options.vectors_vocabulary,
    )
    keras.utils.set_random_seed(config.seed)
    dataset, _ = load_labelled_data(data, seed=config.seed, **{name: getattr(options, name) for name in DATA_OPTIONS})
    if config.objective is None and dataset.multi_label and verbose:
        print(
            "Multi-label data: the search maximises val_macro_f1, the validation macro F1 with each label at "
            "its best threshold (objective: in the config to change it)"
        )
    config.objective = config.objective_for(dataset.multi_label)
    _check_same_search(directory, config, tuner)
    encoder_path = os.path.join(directory, "encoder.keras")
    new_encoder = not os.path.exists(encoder_path)
    encoder = load_encoder(encoder_path) if not new_encoder else _search_encoder(config, dataset, options)
    class_weights, label_weights, weights_by_name = class_weights_of(options.class_weight, dataset)
    hypermodel = TextAttentionHyperModel(
        config, dataset.num_classes, encoder, options.dtype_policy, dataset.multi_label, label_weights
    )
    hypermodel.check_space()  # before the directory records this search: a mended config may start it
    os.makedirs(directory, exist_ok=True)  # only now: a search refused before it starts leaves no folder behind
    _record_search(directory, config, tuner)
    if new_encoder:
        save_encoder(encoder_path, encoder)

    if config.embeddings:
        hypermodel.embedding_rows = functools.partial(
            _embedding_rows, directory, config, encoder, dataset["train"], verbose
        )
        hypermodel.embedding_rows(_embedding_size(config)[1])  # made now: a file or word2vec that fails does so here
    search = make_tuner(tuner, hypermodel, config, directory, config.max_trials)
    cache = not dataset.streamed
    train_batches = make_batches(
        dataset["train"],
        encoder,
        config.batch_size,
        shuffle=True,
        seed=config.seed,
        cache=cache,
        rows=(dataset.rows or {}).get("train"),
    )
    predict_batch_size = inference_batch_size(config.batch_size)  # validation and the best model's scores
    validation_batches = make_batches(
        dataset["validation"], encoder, predict_batch_size, cache=cache, rows=(dataset.rows or {}).get("validation")
    )
    with without_optimizer_state_warning():  # hyperband starts a continued trial from its parent's checkpoint
        try:
            search.search(
                train_batches,
                validation_data=validation_batches,
                epochs=config.epochs,
                verbose=verbose,
                class_weight=class_weights,
                shuffle=False,
            )  # make_batches shuffles, with the seed
        except RuntimeError as error:  # keras-tuner's end of a search whose trials fail, with a traceback
            if not str(error).startswith("Number of consecutive failures"):
                raise
            raise RunError(
                f"the search in {directory} stopped: {search.oracle.max_consecutive_failed_trials} trials "
                f"in a row failed, the last with: {last_error(str(error))}"
            ) from error
    if os.environ.get("KERASTUNER_TUNER_ID", "chief") != "chief":
        return []  # a worker: the chief writes the results

    rows = trials_table(search, config)
    if not rows:
        raise RunError(f"no trial of the search in {directory} finished; see the trial errors above")
    _write_tables(directory, rows + failed_trials(search, config))
    _save_best(
        search,
        hypermodel,
        config,
        dataset,
        os.path.join(directory, "best"),
        rows[0]["score"],
        weights_by_name,
        predict_batch_size,
    )
    return rows


def _search_options(train_config, options):
    """The `TrainConfig` of a search's options (`tune`'s), refusing what a search does not take."""
    unknown = sorted(set(options) - set(DATA_OPTIONS) - set(TRIAL_OPTIONS))
    if unknown:
        raise RunError(
            f"tune() takes no {', '.join(unknown)}; its data options are {', '.join(DATA_OPTIONS)}, and "
            f"its trials' {', '.join(TRIAL_OPTIONS)}"
        )
    chosen = TrainConfig.of(train_config, **options)
    ignored = sorted(set(chosen.given()) - set(DATA_OPTIONS) - set(TRIAL_OPTIONS))
    if ignored:
        raise RunError(
            f"a search takes no {', '.join(ignored)} from its TrainConfig: a trial trains as its tuner "
            "config says (tuner, fixed, hyperparameters)"
        )
    check_class_weight(chosen.class_weight)
    return chosen


def _check_search(tuner, max_trials, epochs, directory):
    if tuner not in TUNER_CLASSES:
        raise RunError(f"unknown --tuner {tuner!r}; choose one of {', '.join(TUNER_CLASSES)}")
    if tuner == "hyperband" and max_trials is not None:  # keras-tuner's Hyperband has no such setting
        raise RunError(
            "max_trials (--max-trials) is for the random and bayesian tuners; hyperband's number of trials "
            "follows from epochs (--epochs), the most a trial trains"
        )
    check_path(directory, "directory (--directory)")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise RunError(f"{directory} is a file; give the folder of the search as --directory")
    for name, value in (("max-trials", max_trials), ("epochs", epochs)):  # 0 read as "the config's", -1 ran none
        if value is not None:
            check_whole(name, value)


def _set_search(config, tuner, preset, max_trials, epochs, verbose):
    """The tuner config with `tune`'s overrides and the preset's schedule, saying what it takes."""
    if preset is not None:
        check_preset(preset)
        config.preset = preset
    config.max_trials = max_trials or config.max_trials
    config.epochs = epochs or config.epochs
    if tuner == "hyperband" and verbose:
        print(
            f"hyperband trains its trials for 1 to {config.epochs} epochs, the better ones continued from their "
            f"weights; epochs (--epochs, the config's tuner.epochs) sets how many trials it runs, not max_trials"
        )
    taken = {
        name: value
        for name, value in get_spec(config.model).preset_arguments(config.preset).items()
        if name not in config.fixed and name not in config.hyperparameters
    }
    if taken and verbose:
        print(
            f"Every trial's {config.model} has the {config.preset} preset's "
            + options_said(taken)
            + " (neither fixed nor searched in the config; --preset paper for the paper's sizes)"
        )
    if config.lr_schedule is None:  # as `train` would train with the preset
        config.lr_schedule = get_spec(config.model).training_defaults(config.preset).get("lr_schedule", "constant")
        if config.lr_schedule != "constant" and verbose:
            print(
                f"Every trial trains with the {config.lr_schedule} learning-rate schedule, the {config.preset} "
                f"preset's for {config.model} (tuner.lr_schedule in the config to change it)"
            )


def _search_encoder(config, dataset, options):
    """The one encoder of every trial, adapted with the largest vocabulary and lengths searched."""
    spec = get_spec(config.model)
    largest = {name: value for name in ENCODER_HYPERPARAMETERS if (value := config.largest(name))}
    encoder_options = spec.encoder_options(config.fixed, **config.encoder, **largest)
    chosen = choose_lengths_saying_so(spec, encoder_options, dataset["train"], options.verbose, in_config=True)
    encoder = TextEncoder(**{**encoder_options, **chosen})
    rows = dataset.rows["train"] if dataset.rows else None
    encoder.adapt(dataset["train"] if rows is None else sample_rows(dataset["train"], ADAPT_ROWS, rows, config.seed))
    if options.vectors_vocabulary:
        encoder.extend_vocabulary(vectors_words(config.embeddings["source"], options.vectors_vocabulary))
    return encoder


def _save_best(search, hypermodel, config, dataset, folder, score, weights_by_name, predict_batch_size):
    """The best trial's model as a run folder at `folder`, with its scores on every split (for
    multi-label data, with the thresholds chosen on the validation split, as `train` chooses them)."""
    with without_optimizer_state_warning():  # the best trial's checkpoint holds its optimizer's state
        best_model = search.get_best_models(1)[0]
    best_hp = search.get_best_hyperparameters(1)[0]
    best_vocabulary = hypermodel.vocabulary_size(best_hp)
    encoder = hypermodel.trial_encoder(best_hp)  # as the best trial read its texts
    searched = hypermodel.declare(best_hp)
    best = {**_preset_arguments(config), **searched}
    scored = {split: scored_rows(split, dataset[split], (dataset.rows or {}).get(split)) for split in dataset.splits}
    predicted = {
        split: predictions(best_model, make_batches(split_rows, encoder, predict_batch_size, cache=False, rows=count))
        for split, (split_rows, count) in scored.items()
    }
    accuracy, f1, multi_label = split_scores(predicted, dataset.label_names, dataset.multi_label)
    metrics = {
        "model": config.model,
        "preset": config.preset,
        "model_kwargs": _builder_arguments(best),
        "hyperparameters": {**config.fixed, **searched},
        "accuracy": accuracy,
        "macro_f1": f1,
        "multi_label": multi_label,
        "training_rows_scored": scored["train"][1],
        "objective": config.objective,
        "score": score,
        "tuner_config": config.path,
        "label_names": dataset.label_names,
        "parameters": int(best_model.count_params()),
        "encoder": encoder.get_config(),
        "class_weight": weights_by_name,
        "dtype_policy": best_model.dtype_policy.name,
        "lr_schedule": config.lr_schedule,
    }
    if config.embeddings:
        size = best_model.get_layer("embedding").output_dim
        metrics["embeddings"] = {
            "source": config.embeddings["source"],
            "dimension": size,
            "coverage": coverage(
                hypermodel.embedding_rows(size)[1], min(best_vocabulary, encoder.counted_vocabulary_size())
            ),
            "words_added": encoder.added_tokens,
            "frozen": hypermodel.frozen(best),
        }
    save_run(folder, best_model, encoder, dataset.label_names, metrics)


def _embedding_size(config):
    """The builder argument that sizes the token embedding, and its value: the default of its
    search space, or fixed, or the preset's, or the builder's default."""
    argument = get_spec(config.model).embedding_size_argument
    if argument in config.hyperparameters:
        return argument, config.hyperparameters[argument]["default"]
    return argument, get_spec(config.model).embedding_size(_preset_arguments(config))


def _embeddings_setting(config, embeddings, freeze_embeddings, vectors_vocabulary=None):
    """What `config.embeddings` records for `tune`'s `embeddings`, `freeze_embeddings` and
    `vectors_vocabulary` ({"source", "frozen"[, "vectors_vocabulary"]} or None), refusing,
    before any data is read, a setting no trial could use: a vectors file of another dimension
    than the embedding or with a searched embedding size (word2vec is trained for each size
    searched), `freeze_embeddings` both given and searched, or searched without vectors, and
    words of the vectors added with a searched `max_tokens`."""
    check_embeddings(embeddings, freeze_embeddings, vectors_vocabulary)
    if vectors_vocabulary and "max_tokens" in config.hyperparameters:
        raise RunError(
            f"{config.path}: hyperparameters.max_tokens: a search over the vocabulary cuts it, which would "
            "cut the words that --vectors-vocabulary adds; fix max_tokens, or leave --vectors-vocabulary out"
        )
    searched = "freeze_embeddings" in config.hyperparameters
    if embeddings in (None, RANDOM_EMBEDDINGS):
        if searched:
            raise RunError(
                f"{config.path}: hyperparameters.freeze_embeddings: there is nothing to freeze without "
                "embeddings (--embeddings)"
            )
        return None
    if searched and freeze_embeddings:
        raise RunError(
            f"freeze_embeddings (--freeze-embeddings) fixes what {config.path} searches "
            "(hyperparameters.freeze_embeddings); give one of them"
        )
    if embeddings == "word2vec":
        return {"source": "word2vec", "frozen": bool(freeze_embeddings)}
    argument, size = _embedding_size(config)
    if argument in config.hyperparameters:
        raise RunError(
            f"{config.path}: hyperparameters.{argument}: the embedding size cannot be searched with a "
            f"vectors file (--embeddings {embeddings}), whose vectors have one size; fix it under `fixed` "
            "(word2vec can be searched over sizes: --embeddings word2vec)"
        )
    found = vectors_dimension(embeddings)
    if found != size:
        raise RunError(
            f"{embeddings} has {found}-dimensional vectors; the {config.model} embedding has {size} "
            f"(set it to match in {config.path}: fixed: {{{argument}: {found}}})"
        )
    source = embeddings if embeddings in PACKAGED_VECTORS else os.path.abspath(embeddings)
    added = {"vectors_vocabulary": vectors_vocabulary} if vectors_vocabulary else {}  # searches from before: unchanged
    return {"source": source, "frozen": bool(freeze_embeddings), **added}


def _embedding_rows(directory, config, encoder, train_rows, verbose, size):
    """The initial token embedding of `size` columns for the encoder's vocabulary, and which of
    its ids have a vector: made from `config.embeddings["source"]` (word2vec on `train_rows`,
    seeded) once per size and kept in `directory/embeddings-<size>.npz`, which later trials and
    a resumed search read."""
    path = os.path.join(directory, f"embeddings-{size}.npz")
    if os.path.exists(path):
        with np.load(path) as stored:
            return stored["rows"], stored["covered"]
    source = config.embeddings["source"]
    rows, covered = initial_embedding(source, encoder, train_rows, size, seed=config.seed)
    write_atomically(path, lambda temporary: np.savez(temporary, rows=rows, covered=covered))
    if verbose:
        print(
            f"Embeddings from {source} ({size} dimensions): "
            f"{coverage(covered, encoder.counted_vocabulary_size()):.1%} of "
            "the vocabulary has a vector"
            + (f"; {encoder.added_tokens:,} more of its words added to the vocabulary" if encoder.added_tokens else "")
        )
    return rows, covered


def _search_space(config, tuner):
    """What `directory/search.json` records of a search: its tuner and all of its config but its
    path and `max_trials` (which may grow), as it reads back (tuples become lists)."""
    space = {k: v for k, v in dataclasses.asdict(config).items() if k not in ("path", "max_trials")}
    return json.loads(json.dumps({**space, "tuner": tuner}))


def _check_same_search(directory, config, tuner):
    """Refuse a directory whose search used another tuner or search space (its trials would mix with
    ours), and one that holds a training run or files of a search that recorded no config (its
    encoder.keras would be read as the search's)."""
    path = os.path.join(directory, "search.json")
    if os.path.exists(path):
        stored, space = read_json(path), _search_space(config, tuner)
        stored.setdefault("tuner", tuner)  # recorded since 2026-11-27
        if stored["tuner"] != tuner:
            raise RunError(
                f"{directory} holds a {stored['tuner']} search; resume it with --tuner {stored['tuner']}, "
                "or use another --directory"
            )
        changed = sorted(k for k in set(stored) | set(space) if stored.get(k) != space.get(k))
        if changed:
            raise RunError(
                f"{directory} holds a search of another config (it differs in {', '.join(changed)}); "
                "use another --directory, or the config and options it was started with"
            )
    elif any(os.path.exists(os.path.join(directory, name)) for name in ("run.json", "model.keras")):
        raise RunError(
            f"{directory} is a run folder (keras-textattn train): a search would read its encoder.keras "
            "as its own; give a new folder, or an earlier search's, as --directory"
        )
    elif any(os.path.exists(os.path.join(directory, name)) for name in (config.model, "encoder.keras")):
        raise RunError(
            f"{directory} holds a search without a record of its config (search.json); use another --directory"
        )


def _record_search(directory, config, tuner):
    """Write `directory/search.json` for a new search (`_check_same_search` checks it later)."""
    path = os.path.join(directory, "search.json")
    if not os.path.exists(path):
        write_text(path, json.dumps(_search_space(config, tuner), indent=2, sort_keys=True))


def trials_table(search, config):
    """Finished trials as dicts, best first: trial, hyperparameters, score, epochs (those its model
    trained, a hyperband trial's parents' included), seconds; for hyperband, the trial whose
    weights it continued (`continues`)."""
    rows = []
    for trial in search.oracle.trials.values():
        if trial.status != "COMPLETED" or trial.score is None:
            continue
        timing = {
            name: trial.metrics.get_last_value(name) if trial.metrics.exists(name) else None
            for name in ("epochs", "seconds")
        }
        rows.append(
            _trial_row(
                search,
                config,
                trial,
                score=float(trial.score),
                epochs=timing["epochs"] and int(timing["epochs"]),
                seconds=timing["seconds"],
            )
        )
    rows.sort(key=lambda r: -r["score"] if config.direction == "max" else r["score"])
    return rows


def failed_trials(search, config):
    """Trials that failed (a diverged training, say), as rows of `trials_table` without a score,
    and why in `failed`."""
    return [
        _trial_row(search, config, trial, score=None, epochs=None, seconds=None, failed=last_error(trial.message or ""))
        for trial in search.oracle.trials.values()
        if trial.status == "FAILED"
    ]


def _trial_row(search, config, trial, **results):
    """A row of the trials table: trial, hyperparameters, `results`; for hyperband, `continues`."""
    row = {"trial": trial.trial_id, **{name: trial.hyperparameters.values.get(name) for name in config.hyperparameters}}
    row.update(results)
    if isinstance(search, TUNER_CLASSES["hyperband"]):
        row["continues"] = trial.hyperparameters.values.get("tuner/trial_id")
    return row


def _write_tables(directory, rows):
    """trials.csv and trials.md: the rows' columns, and `failed` when a row has it."""
    columns = list(rows[0]) + (["failed"] if any("failed" in row for row in rows) else [])

    def cell(value):
        if isinstance(value, float):
            return f"{value:.4g}"
        return "" if value is None else str(value).replace("|", "\\|")

    def write_csv(temporary):
        with open(temporary, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, columns, restval="")
            writer.writeheader()
            writer.writerows(rows)

    write_atomically(os.path.join(directory, "trials.csv"), write_csv)
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows]
    write_text(os.path.join(directory, "trials.md"), "\n".join(lines) + "\n")
