"""`train()`: data to a finished run folder, resumable and distributable (TensorFlow backend).

What a run folder holds, and how it is read: `keras_textattn.run_folder`. The options of a
run: `TrainConfig`. Here: resolving them (the preset's recipe, the fallbacks), the folder's
state, and the steps that write it.
"""

import contextlib
import dataclasses
import functools
import json
import os
import shutil
import warnings

import keras
import numpy as np

from keras_textattn import _backend
from keras_textattn._files import check_path
from keras_textattn._files import check_room
from keras_textattn._files import locked
from keras_textattn._files import write_text
from keras_textattn.datasets import encoded_rows
from keras_textattn.datasets import inference_batch_size
from keras_textattn.datasets import keeps_ids
from keras_textattn.datasets import load_labelled_data
from keras_textattn.datasets import make_batches
from keras_textattn.datasets.pipeline import has_fixed_shape
from keras_textattn.datasets.pipeline import ids_bytes
from keras_textattn.models import get_spec
from keras_textattn.run_folder import IDS_FOLDER
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import load_encoder
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import recover_replacement
from keras_textattn.run_folder import remove_temporary_files
from keras_textattn.run_folder import replace_aside
from keras_textattn.run_folder import save_encoder
from keras_textattn.run_folder import save_run
from keras_textattn.text.vectors import vectors_words
from keras_textattn.training import ray_launcher
from keras_textattn.training.adversarial import use_adversarial_training
from keras_textattn.training.auto import check_auto_options
from keras_textattn.training.auto import race
from keras_textattn.training.backup import BestEpoch
from keras_textattn.training.backup import RunBackup
from keras_textattn.training.backup import restore
from keras_textattn.training.callbacks import DeferredInterrupt
from keras_textattn.training.callbacks import EpochRateTensorBoard
from keras_textattn.training.callbacks import EpochSeconds
from keras_textattn.training.callbacks import StopOnDivergence
from keras_textattn.training.callbacks import diverged_run
from keras_textattn.training.callbacks import weights_are_numbers
from keras_textattn.training.checks import check_run_options
from keras_textattn.training.checks import check_sizes_fit
from keras_textattn.training.model_setup import accept_shorter_ids
from keras_textattn.training.model_setup import build_classifier
from keras_textattn.training.model_setup import class_weights_of
from keras_textattn.training.model_setup import compile_classifier
from keras_textattn.training.model_setup import cuts_padding
from keras_textattn.training.model_setup import default_vectors_chosen
from keras_textattn.training.model_setup import embedding_updates
from keras_textattn.training.model_setup import fit_encoder
from keras_textattn.training.model_setup import initialise_embeddings
from keras_textattn.training.model_setup import initialise_from
from keras_textattn.training.model_setup import left_to_rows
from keras_textattn.training.model_setup import make_optimizer
from keras_textattn.training.model_setup import predictions
from keras_textattn.training.model_setup import scored_rows
from keras_textattn.training.model_setup import source_run_metrics
from keras_textattn.training.model_setup import split_scores
from keras_textattn.training.model_setup import vectors_left_to_texts
from keras_textattn.training.model_setup import with_batch_for_rows
from keras_textattn.training.model_setup import with_default_vectors
from keras_textattn.training.model_setup import with_fast_training
from keras_textattn.training.model_setup import with_multi_label_training
from keras_textattn.training.model_setup import with_recipe
from keras_textattn.training.multi_worker import train_multi_worker
from keras_textattn.training.run_state import count_rows
from keras_textattn.training.run_state import keep_history_before
from keras_textattn.training.run_state import out_of_memory_said
from keras_textattn.training.run_state import read_history
from keras_textattn.training.run_state import removed_if_nothing_trained
from keras_textattn.training.run_state import run_state
from keras_textattn.training.schedules import schedule_callbacks
from keras_textattn.training.strategies import even_first_batch
from keras_textattn.training.strategies import is_chief
from keras_textattn.training.strategies import make_strategy
from keras_textattn_config.train_config import AUTO
from keras_textattn_config.train_config import FAST_ROWS
from keras_textattn_config.train_config import FIELDS
from keras_textattn_config.train_config import FROM_SOURCE_RUN
from keras_textattn_config.train_config import SPARSE_TABLE_ROWS
from keras_textattn_config.train_config import STEPS_PER_EPOCH
from keras_textattn_config.train_config import TrainConfig
from keras_textattn_config.train_config import default_of
from keras_textattn_config.train_config import jsonable
from keras_textattn_config.train_config import options_said


def train(model=None, data=None, output="runs/run", config=None, **overrides):
    """Train `model` on `data` and write a run folder at `output`.

    Args:
        model: a name of `keras_textattn.models.SPECS`, or "auto" (`keras_textattn.training.auto`:
            a race on the held-out data between the fast paper models, keeping the best); None:
            "auto", or with `init_from` the model of that run.
        data: a TFDS name, a local CSV/TSV, JSONL or TFRecord file (plain or .gz), a glob or a
            folder of shards (streamed), or a dict of split name to a `LocalFile` or a file (read
            with the column options given here, as `data` is).
        output: the run folder to write; an unfinished run there is resumed when its options
            (run.json) are these, a finished one refused without `overwrite`.
        config: a `TrainConfig` (or a dict of its fields); None: the defaults.
        **overrides: fields of `TrainConfig` that replace the config's, e.g. `epochs=5`.

    Returns:
        The metrics dict written to metrics.json.

    Example:
        `train("lama", "train.csv", "runs/lama", epochs=5, lr_schedule="cosine")`, or with a
        config kept for several runs: `train("hcan", "train.csv", "runs/hcan", recipe, seed=1)`.
    """
    config = TrainConfig.of(config, **overrides)
    _backend.require_tensorflow("Training")
    check_path(output, "output (--output)")
    if model == AUTO or (model is None and config.init_from is None):
        return _train_auto(data, output, config)
    source_run = None  # with init_from: that run's metrics.json
    if config.init_from is not None:
        source_run = _check_init_from(model, output, config)
        model = source_run["model"]
    spec = check_run_options(model, config)
    run_json = {"model": model, "data": jsonable(data), **config.resumed()}
    # The paper's recipe fills what the user left unset (preset "paper"); run.json keeps what was given.
    recipe, used = with_recipe(spec, config)
    if config.early_stopping_monitor is not None and used.early_stopping is None:
        raise RunError(
            f"early_stopping_monitor (--early-stopping-monitor) is what early stopping watches; give its "
            f"patience too (--early-stopping N); got monitor {config.early_stopping_monitor!r} without it"
        )
    check_sizes_fit(spec, used)  # before the data is read and anything written
    if config.distribute == "ray":
        return _train_on_ray(model, data, output, config, run_json)
    if recipe and config.verbose:
        whose = (
            f"The {model} paper's recipe (--preset paper; "
            if config.preset == "paper"
            else f"The {model} {config.preset} preset's training ("
        )
        print(whose + "give the option to change it): " + options_said(recipe))
    strategy = make_strategy(config.distribute)  # first: MultiWorkerMirroredStrategy must precede other ops
    _check_batch_splits(used.batch_size, strategy, config.distribute)
    run_state(output, config.overwrite, run_json)  # a quick first look, before the data is read
    dataset, source = _load_data(data, config)  # bad data fails here, before anything on disk changes
    multi_label_chosen = {}
    if dataset.multi_label:
        used, multi_label_chosen = with_multi_label_training(config, recipe, used)
        if multi_label_chosen and config.verbose:
            print("Multi-label data (give --epochs / --early-stopping to set): " + options_said(multi_label_chosen))
    chief = is_chief(strategy)
    with locked(output) if chief else contextlib.nullcontext(), out_of_memory_said(model):
        if chief and recover_replacement(output) == "rolled back":  # said in --quiet too: not progress
            warnings.warn(
                f"{output}: a replacement of this run was interrupted (killed); its previous run was put back"
                + (", and --overwrite replaces it again, from epoch 1" if config.overwrite else ""),
                stacklevel=2,
            )
        state = run_state(output, config.overwrite, run_json)
        keras.utils.set_random_seed(config.seed)
        run = _Run(
            model=model,
            output=output,
            config=used,
            run_json=run_json,
            dataset=dataset,
            source=source,
            strategy=strategy,
            chief=chief,
            resume=state == "resume",
            source_run=source_run,
            left_to_rows=left_to_rows(config, recipe, multi_label_chosen),
            vectors_left_to_texts=vectors_left_to_texts(spec, config),
        )
        if state == "overwrite" and chief:
            # The old run is kept aside until the new one is written, and restored if it fails.
            with replace_aside(output):
                return _train_run(run)
        if state == "new" and chief:
            with removed_if_nothing_trained(output):
                return _train_run(run)
        return _train_run(run)


def _train_auto(data, output, config):
    """`train` with model "auto": `auto.race` in the output folder, resumed, replaced or new as any run."""
    check_auto_options(config)
    run_json = {"model": AUTO, "data": jsonable(data), **config.resumed()}
    candidates = dataclasses.replace(config, overwrite=False)  # an overwritten race starts with none
    with locked(output):
        recover_replacement(output)
        state = run_state(output, config.overwrite, run_json)
        if state == "overwrite":  # the old run is put back if the race fails
            context = replace_aside(output)
        elif state == "new":
            context = removed_if_nothing_trained(output)
        else:
            context = contextlib.nullcontext()
        with context:
            write_text(os.path.join(output, "run.json"), json.dumps(run_json, indent=2, sort_keys=True))
            return race(train, data, output, candidates)


@dataclasses.dataclass
class _Run:
    """A run `train()` has resolved: `config` with the recipe and fallbacks filled in (its batch size
    and rate replaced once the training rows are counted, for those of `left_to_rows`, and its vectors
    once the encoder counted the texts, with `vectors_left_to_texts`), `run_json`
    what run.json holds (the options as given), `source_run` the metrics of the `init_from` run."""

    model: str
    output: str
    config: TrainConfig
    run_json: dict
    dataset: object
    source: object
    strategy: object
    chief: bool
    resume: bool
    source_run: dict | None
    left_to_rows: set
    vectors_left_to_texts: bool


def _check_init_from(model, output, config):
    """The metrics.json of the run `config.init_from` names, after the checks of starting from it."""
    if os.path.abspath(config.init_from) == os.path.abspath(output):
        raise RunError(f"init_from (--init-from) is the output folder {output}; write the new run to another --output")
    source_run = source_run_metrics(config.init_from, model)
    taken = [name for name in FROM_SOURCE_RUN if (getattr(config, name) or None) != (default_of(FIELDS[name]) or None)]
    if taken:
        flags = ["--set" if name == "model_kwargs" else "--" + name.replace("_", "-") for name in taken]
        raise RunError(
            f"a run started from another (--init-from) takes its model's sizes, encoder and weights "
            f"from {config.init_from}; leave out {', '.join(flags)}"
        )
    return source_run


def _train_on_ray(model, data, output, config, run_json):
    """The run as Ray workers run it (`ray_launcher`), after the output's refusals (the workers
    would make them half a minute later)."""
    data, output, worker_config = ray_launcher.worker_arguments(data, output, config)
    run_state(output, config.overwrite, {**run_json, "data": jsonable(data), **worker_config.resumed()})
    return ray_launcher.train_on_ray(train, model, data, output, worker_config, config.workers, config.ray_address)


def _check_batch_splits(batch_size, strategy, distribute):
    replicas = strategy.num_replicas_in_sync
    if batch_size % replicas:
        lower = batch_size - batch_size % replicas
        raise RunError(
            f"batch size {batch_size} (--batch-size: the global batch) does not split evenly over the "
            f"{replicas} replicas of --distribute {distribute}; give a multiple of {replicas}, e.g. "
            + (f"{lower} or {lower + replicas}" if lower else f"{replicas}")
        )


def _load_data(data, config):
    dataset, source = load_labelled_data(
        data,
        test_data=config.test_data,
        validation_data=config.validation_data,
        text_column=config.text_column,
        label_column=config.label_column,
        header=config.header,
        label_offset=config.label_offset,
        label_names=config.label_names,
        data_dir=config.data_dir,
        validation_fraction=config.validation_fraction,
        seed=config.seed,
        stream=config.stream,
        skip_bad_rows=config.skip_bad_rows,
        group_column=config.group_column,
        delimiter=config.delimiter,
        multi_label=config.multi_label,
        label_delimiter=config.label_delimiter,
    )
    if dataset.skipped and config.verbose:
        for split, skipped in dataset.skipped.items():
            print(
                f"Skipped in {split}: {skipped['rows']} rows, {len(skipped['files'])} files; first: {skipped['first']}"
            )
    return dataset, source


def _train_run(run):
    """The part of `train()` that writes the run folder: encoder, fit (resumed from the backup),
    evaluation, files."""
    config, output, dataset = run.config, run.output, run.dataset
    os.makedirs(output, exist_ok=True)
    rows = {
        split: (dataset.rows or {}).get(split) for split in ("train", "validation", "test") if split in dataset.splits
    }
    rows = {split: count_rows(dataset[split]) if count is None else count for split, count in rows.items()}
    if run.left_to_rows:
        run.config = config = _chosen_from_rows(run, rows["train"])
    if run.chief:
        remove_temporary_files(output)  # of a write that a kill interrupted
        write_text(os.path.join(output, "run.json"), json.dumps(run.run_json, indent=2, sort_keys=True))
    spec = get_spec(run.model)
    source_model = source_encoder = None
    if run.source_run is not None:  # the sizes, encoder and weights of the init_from run
        source_model, source_encoder, _ = load_run(config.init_from)
        if not weights_are_numbers(source_model):
            raise RunError(
                f"{config.init_from} (--init-from) holds weights that are not numbers (a run that "
                "diverged): start from another run, or without one"
            )
        preset, model_kwargs = run.source_run["preset"], run.source_run["model_kwargs"]
    else:
        preset = config.preset
        model_kwargs = {**spec.preset_arguments(preset), **config.model_kwargs}
    encoder, model_kwargs = _encoder(run, spec, model_kwargs, rows["train"], source_encoder)
    config = run.config  # with the vectors the training texts chose (`default_vectors_chosen`)
    class_weights, label_weights, class_weight = class_weights_of(config.class_weight, dataset)
    with run.strategy.scope():
        classifier = build_classifier(
            spec,
            dataset.num_classes,
            encoder,
            model_kwargs,
            config.model_kwargs,
            config.dtype_policy,
            dataset.multi_label,
        )
        embeddings = initialise_embeddings(classifier, run.model, encoder, dataset["train"], config)
        initialised_from = initialise_from(classifier, source_model, config.init_from, config.verbose)
        updates = embedding_updates(config, classifier)
        if updates == "sparse" and config.embedding_updates == "auto" and config.verbose:
            print(
                f"The embedding tables hold {SPARSE_TABLE_ROWS:,} rows or more: each step updates only the rows "
                "its batch used (--embedding-updates dense updates every row)"
            )
        compile_classifier(
            classifier,
            make_optimizer(config, updates),
            config.label_smoothing,
            multi_label=dataset.multi_label,
            label_weights=label_weights,
        )
        # Built here, not by Keras inside the first trace of the training step: a traced function
        # that creates variables is traced a second time.
        classifier.optimizer.build(classifier.trainable_variables)
        if config.adversarial:
            use_adversarial_training(classifier, config.adversarial)
        cut = cuts_padding(spec, encoder, config, rows["train"])
        if cut:
            accept_shorter_ids(classifier)
    fitted = _fit(
        run,
        classifier,
        encoder,
        rows,
        class_weights,
        label_weights,
        cut,
        rebuild=lambda: build_classifier(
            spec, dataset.num_classes, encoder, model_kwargs, {}, config.dtype_policy, dataset.multi_label
        ),
    )
    classifier, history, best, resumed_from_epoch, trained_on = fitted
    accuracy, f1, multi_label = _scores(run, classifier, encoder, rows, trained_on, cut)
    metrics = {
        "model": run.model,
        "preset": preset,
        "model_kwargs": model_kwargs,
        "data": run.source if isinstance(run.source, str) else {k: str(v.path) for k, v in run.source.items()},
        "label_names": dataset.label_names,
        "accuracy": accuracy,
        "macro_f1": f1,
        "multi_label": multi_label,
        "rows": rows,
        "training_rows_scored": scored_rows("train", dataset["train"], rows["train"])[1],
        "skipped": dataset.skipped,
        "class_weight": class_weight,
        **_training_record(run, history, best, resumed_from_epoch, rows["train"]),
        "parameters": int(classifier.count_params()),
        "embedding_updates": updates,
        "dtype_policy": classifier.dtype_policy.name,
        "embeddings": embeddings,
        "initialised_from": initialised_from,
        "encoder": encoder.get_config(),
    }
    if run.chief:
        save_run(output, classifier, encoder, dataset.label_names, metrics)
        shutil.rmtree(os.path.join(output, "backup"), ignore_errors=True)
        shutil.rmtree(os.path.join(output, IDS_FOLDER), ignore_errors=True)
    return metrics


def _scores(run, classifier, encoder, rows, trained_on, cut_padding):
    """`(accuracy, macro F1, the multi-label record or None)` by split of the trained `classifier`,
    the training split's on a sample of it (`scored_rows`): the `trained_on` ids where training kept
    them, the split's texts encoded again elsewhere."""
    dataset = run.dataset
    predict_batch_size = inference_batch_size(run.config.batch_size)
    predicted = {}
    for split, count in rows.items():
        split_rows = trained_on.get(split, dataset[split])  # training's ids: not encoded again
        split_rows, count = scored_rows(split, split_rows, count)
        batches = make_batches(
            split_rows, encoder, predict_batch_size, rows=count, cache=False, cut_padding=cut_padding
        )
        predicted[split] = (
            predictions(classifier, batches) if cut_padding else predictions(classifier, batches, split_rows)
        )
    return split_scores(predicted, dataset.label_names, dataset.multi_label)


def _training_record(run, history, best, resumed_from_epoch, train_rows):
    """What metrics.json records of how the run trained."""
    config, seconds = run.config, history.get("seconds", [])
    return {
        "history": history,
        "seconds_per_epoch": seconds,
        "examples_per_second": float(train_rows / np.mean(seconds)) if seconds else None,
        "epochs": config.epochs,
        "resumed_from_epoch": resumed_from_epoch,
        "early_stopping": config.early_stopping,
        "early_stopping_monitor": (config.early_stopping_monitor or "loss") if config.early_stopping else None,
        "optimizer": config.optimizer,
        "learning_rate": config.learning_rate,
        "weight_decay": config.weight_decay,
        "lr_schedule": config.lr_schedule or "constant",
        "clip_norm": config.clip_norm,
        "adversarial": config.adversarial,
        "label_smoothing": config.label_smoothing,
        "best_epoch": best.best["epoch"] if best and best.best else None,
        "stopped_early": bool(best and best.stopped),
        "batch_size": config.batch_size,
        "seed": config.seed,
        "distribute": config.distribute or "none",
        "replicas": run.strategy.num_replicas_in_sync,
    }


def _chosen_from_rows(run, train_rows):
    """The run's config with the options of `run.left_to_rows` chosen from its `train_rows`, each
    said when it is not the fallback's: the fast preset's (`with_fast_training`), the batch size
    and, where it is the optimizer's default, the learning rate (`with_batch_for_rows`)."""
    config, fast = with_fast_training(run.config, train_rows, run.left_to_rows)
    if fast and config.verbose:
        print(
            f"The fast preset on {train_rows:,} training rows ({FAST_ROWS:,} or more; give the option to set "
            "it): " + options_said(fast)
        )
    if "batch_size" in run.left_to_rows:
        config = _batch_chosen_saying_so(config, train_rows, "learning_rate" in run.left_to_rows)
    check_sizes_fit(get_spec(run.model), config)
    return config


def _batch_chosen_saying_so(config, train_rows, scale_rate):
    """`config` with the batch size (and with `scale_rate` the rate) of `with_batch_for_rows`, said."""
    config, chosen = with_batch_for_rows(config, train_rows, scale_rate)
    if chosen and config.verbose:
        print(
            f"Chosen from the {train_rows:,} training rows (an epoch of {STEPS_PER_EPOCH} steps or more; give "
            "--batch-size / --learning-rate to set): "
            + ", ".join(f"{name} {value:g}" for name, value in chosen.items())
        )
    return config


def _encoder(run, spec, model_kwargs, train_rows, source_encoder):
    """`(encoder, model_kwargs)`: the run's encoder (a resumed run's, the `init_from` run's, or one
    fitted on the training texts, its lengths chosen from them where not given; saved in the run
    folder), and the builder arguments. Where `run.vectors_left_to_texts`, `run.config` and the
    arguments take the vectors its vocabulary chose (`default_vectors_chosen`), whose words a fitted
    encoder then adds (a resumed one holds them)."""
    path = os.path.join(run.output, "encoder.keras")
    resumed = run.resume and os.path.exists(path)
    if resumed:
        encoder = load_encoder(path)
    elif source_encoder is not None:
        encoder = source_encoder
    else:
        encoder = fit_encoder(spec, run.config, model_kwargs, run.dataset["train"], train_rows)
    if run.vectors_left_to_texts:
        # A resumed run goes on as it started: with the vectors where its encoder holds their words
        # (not with a choice this version would make, which its backup's weights may not fit).
        chosen = encoder.added_tokens > 0 if resumed else default_vectors_chosen(spec, run.config, encoder)
        if chosen:
            run.config, model_kwargs = with_default_vectors(spec, run.config, model_kwargs)
            if not resumed:
                encoder.extend_vocabulary(vectors_words(run.config.embeddings, run.config.vectors_vocabulary))
    if run.chief and not resumed:
        save_encoder(path, encoder)
    return encoder, model_kwargs


def _fit(run, classifier, encoder, rows, class_weights, label_weights, cut_padding, rebuild):
    """Train `classifier` from where the run's backup left it: `(classifier, history, best epoch's
    callback or None, the epoch it resumed from, the `encoded_rows` it trained and validated on by
    split where their token ids are kept: `_kept_ids`)`. With `cut_padding`, on batches of texts of
    similar length cut to their longest (`make_batches`). `rebuild()` makes the same model outside
    any strategy (for the multi-worker loop's evaluation)."""
    config, dataset = run.config, run.dataset
    cache = not dataset.streamed  # streamed rows are read again each epoch, never held

    def batches_of(rows_dataset, batch, count=None, shuffle=False, sample_windows=False):
        return make_batches(
            rows_dataset,
            encoder,
            batch,
            shuffle=shuffle,
            seed=config.seed,
            rows=count,
            cache=cache,
            cut_padding=cut_padding,
            sample_windows=sample_windows,
        )

    if config.distribute == "multi-worker":
        return (*train_multi_worker(run, classifier, rows, batches_of, class_weights, label_weights, rebuild), {})
    predict_batch_size = inference_batch_size(config.batch_size)
    kept = _kept_ids(run, encoder, rows)
    train_batches = batches_of(
        kept.get("train", dataset["train"]), config.batch_size, rows["train"], config.shuffle, config.sample_windows
    )
    validation_batches = batches_of(
        kept.get("validation", dataset["validation"]), predict_batch_size, rows["validation"]
    )
    if config.distribute == "mirrored":
        train_batches, validation_batches = (
            even_first_batch(batches, rows[split], size, run.strategy, split)
            for batches, split, size in (
                (train_batches, "train", config.batch_size),
                (validation_batches, "validation", predict_batch_size),
            )
        )
    backup, history_path = os.path.join(run.output, "backup"), os.path.join(run.output, "history.csv")
    best = (
        BestEpoch(backup, config.early_stopping, config.early_stopping_monitor or "loss")
        if config.early_stopping
        else None
    )
    resumed_from_epoch = restore(classifier, backup) if run.resume else 0
    keep_history_before(history_path, resumed_from_epoch)  # rows of epochs trained again are dropped
    if resumed_from_epoch < config.epochs and not (best and best.stopped):
        interrupt = DeferredInterrupt()
        with interrupt.deferred():
            classifier.fit(
                train_batches,
                validation_data=validation_batches,
                epochs=config.epochs,
                initial_epoch=resumed_from_epoch,
                callbacks=_callbacks(run, best, interrupt),
                verbose=config.verbose,
                shuffle=False,  # make_batches shuffles, with the seed
                class_weight=class_weights,
            )
    if best:
        best.set_model(classifier)
        best.restore_best()
    return classifier, read_history(history_path), best, resumed_from_epoch, kept


def _kept_ids(run, encoder, rows):
    """The training and validation splits as `encoded_rows`, by split, for an `encoder` of ids of a
    fixed shape (not the training split of `sample_windows`, whose windows change): each text is
    encoded once a run, not once an epoch. In memory where the ids fit (`keeps_ids`); else, and for
    streamed data, in files of the run folder's `IDS_FOLDER`, after `check_room` for them. A
    killed run's files, perhaps half written, are removed first."""
    config, dataset = run.config, run.dataset
    folder = os.path.join(run.output, IDS_FOLDER)
    shutil.rmtree(folder, ignore_errors=True)
    if not has_fixed_shape(encoder):
        return {}
    kept = {}
    for split in ("validation",) if config.sample_windows else ("train", "validation"):
        if not dataset.streamed and keeps_ids(encoder, rows[split]):
            kept[split] = encoded_rows(dataset[split], encoder)
            continue
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, split)
        check_room(path, ids_bytes(encoder, rows[split]))
        kept[split] = encoded_rows(dataset[split], encoder, cache_file=path)
    return kept


def _callbacks(run, best, interrupt):
    """`fit`'s callbacks, in the order that keeps a kill between any two of them harmless."""
    config, backup = run.config, os.path.join(run.output, "backup")
    return [
        EpochSeconds(),
        StopOnDivergence(functools.partial(diverged_run, learning_rate=config.learning_rate)),
        # Before the history row (they log each epoch's learning rate) and the checkpoint (its state).
        *schedule_callbacks(config.lr_schedule, config.learning_rate, config.epochs, backup),
        keras.callbacks.CSVLogger(os.path.join(run.output, "history.csv"), append=True),
        # Before the checkpoint too, so no epoch a resumed run skips misses its point (a kill between
        # the two trains the epoch again, and TensorBoard shows it twice at that step).
        EpochRateTensorBoard(os.path.join(run.output, "logs")),
        # After the history row: a kill between the two trains the epoch again, and its row is dropped.
        *([best] if best else []),  # before the checkpoint: a resumed run knows the best epoch
        RunBackup(backup, every=config.checkpoint_every),
        interrupt,  # last: a finished epoch is recorded and backed up before Ctrl-C stops the run
    ]
