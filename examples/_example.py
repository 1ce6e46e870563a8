"""What the example scripts share: their command-line flags and the whole path they run.

Each example trains with the paper's sizes and recipe (`preset="paper"`) and the settings
it passes; `--small` uses the cpu preset instead (each model's `ModelSpec.cpu_defaults`,
the sizes BENCHMARKS.md measures) and shorter texts, so that a run finishes in minutes on
a 2-core CPU. One command goes from data to
a served artifact: an optional keras-tuner search (`--tune CONFIG`, whose best
hyperparameters the run then trains with), training with a `tf.distribute` strategy
(`--distribute`), and an export for TF Serving and LiteRT (`--export DIR`).
"""

import argparse
import inspect
import json
import os
import sys

from keras_textattn_config.flags import path_argument
from keras_textattn_config.flags import progress_verbosity
from keras_textattn_config.train_config import DTYPE_POLICIES
from keras_textattn_config.train_config import SEARCH_DATA_OPTIONS
from keras_textattn_config.train_config import TrainConfig
from keras_textattn_config.train_config import cpu_devices_refusal

# The encoder lengths an example passes `train()`: its search reads the texts at the same lengths.
ENCODER_LENGTHS = ("sequence_length", "max_sentences")


def parse_args(description, default_output):
    # Dedented as Python 3.13 compiles docstrings, so that --help reads the same on every Python.
    parser = argparse.ArgumentParser(
        description=inspect.cleandoc(description),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )  # options in full, as keras-textattn takes them
    parser.add_argument(
        "--data",
        type=path_argument,
        help="a local CSV file (header label,text) instead of downloading the TFDS dataset",
    )
    parser.add_argument(
        "--test-data",
        type=path_argument,
        help="a local test file (same format as --data unless the example says otherwise)",
    )
    parser.add_argument("--output", type=path_argument, default=default_output, help="the run folder")
    parser.add_argument("--epochs", type=int, help="default: the example's (also each search trial's, when given)")
    parser.add_argument("--batch-size", type=int, help="global (default: the paper's; 32 where it gives none)")
    parser.add_argument("--small", action="store_true", help="CPU-sized model (--preset cpu) and texts")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing run and export (a rerun resumes the search)"
    )
    parser.add_argument(
        "--tune",
        type=path_argument,
        metavar="CONFIG",
        help="search hyperparameters first with this tuner config (a YAML file, or a model name for "
        "its shipped one, e.g. lama) in OUTPUT-search/, then train with the best",
    )
    parser.add_argument("--tune-trials", type=int, help="search trials (default: the config's)")
    parser.add_argument(
        "--distribute",
        choices=["none", "mirrored", "multi-worker", "ray"],
        default="none",
        help="the tf.distribute strategy of the training, or ray: --workers processes started by "
        "Ray Train (the docs' guide Distributed training)",
    )
    parser.add_argument("--workers", type=int, help="with --distribute ray: the number of worker processes")
    parser.add_argument(
        "--cpu-devices",
        type=int,
        help="with --distribute mirrored: split the CPU into N devices (mirrored without GPUs)",
    )
    parser.add_argument(
        "--dtype-policy", choices=DTYPE_POLICIES, help="mixed precision for GPUs and TPUs (default: float32)"
    )
    parser.add_argument(
        "--export",
        type=path_argument,
        metavar="DIR",
        help="then export the run: DIR/saved_model (TF Serving) and DIR/tflite (LiteRT), each verified "
        "against the Keras model",
    )
    return parser.parse_args()


def run(args, model, model_kwargs, data, epochs, **train_kwargs):
    """Search (with --tune), train, export (with --export), and print where everything is.
    `model_kwargs`: the builder arguments of the example's variant (sizes come from the preset).
    A user's mistake or a file system's refusal (no network for TFDS, a missing file, an existing
    run) ends the script with one line and exit status 2, as `keras-textattn` does; an interrupted
    run says that the same command resumes it."""
    from keras_textattn.errors import UserError

    program = os.path.basename(sys.argv[0])
    try:
        return _search_train_export(args, model, model_kwargs, data, epochs, train_kwargs)
    except KeyboardInterrupt:
        print(f"{program}: interrupted; run the same command to resume from the last checkpoint", file=sys.stderr)
        sys.exit(130)
    except (UserError, OSError) as error:
        print(f"{program}: error: {str(error).splitlines()[0]}", file=sys.stderr)
        sys.exit(2)


def _search_train_export(args, model, model_kwargs, data, epochs, train_kwargs):
    from keras_textattn.errors import UserError

    if args.cpu_devices is not None:
        from keras_textattn.training import configure_cpu_devices

        refusal = cpu_devices_refusal(args.cpu_devices, args.distribute)
        if refusal:
            raise UserError(refusal)
        configure_cpu_devices(args.cpu_devices)  # first: before TensorFlow sets up its devices
    if args.tune_trials is not None and not args.tune:
        raise UserError(f"--tune-trials goes with --tune CONFIG (a search); got --tune-trials {args.tune_trials} alone")
    if args.export:
        _check_exports(args)  # before the search and the training, not after them
    from keras_textattn.training import train

    model_kwargs = dict(model_kwargs)
    if args.tune:
        model_kwargs.update(_search(args, model, data, train_kwargs))
    config = TrainConfig(
        model_kwargs=model_kwargs,
        preset="cpu" if args.small else "paper",
        epochs=epochs if args.epochs is None else args.epochs,  # 0 is train's one-line error, not the default
        batch_size=args.batch_size,
        distribute=args.distribute,
        workers=args.workers,
        dtype_policy=args.dtype_policy,
        overwrite=args.overwrite,
        verbose=progress_verbosity(),
        **train_kwargs,
    )
    metrics = train(model, data, args.output, config)
    print(json.dumps(metrics["accuracy"], indent=2))
    print(f"Results: {os.path.abspath(args.output)} (metrics.json, model.keras, encoder.keras, logs/)")
    if args.export:
        from keras_textattn import export

        for name, write in (("saved_model", export.saved_model), ("tflite", export.tflite)):
            report = write(args.output, os.path.join(args.export, name), overwrite=args.overwrite)
            print(
                f"Exported {name}: {report['path']} (verified: largest difference {report['max_abs_difference']:.2g})"
            )
    return metrics


def _check_exports(args):
    """Refuse, before the slow part, the `--export` folders that the export would refuse after it."""
    from keras_textattn._files import check_output
    from keras_textattn._files import check_output_file
    from keras_textattn.export.saved_model import SAVED_MODEL_ENTRIES
    from keras_textattn.export.tflite import TFLITE_ENTRIES

    check_output_file(args.export, overwrite=True, folder=True)
    for name, entries in (("saved_model", SAVED_MODEL_ENTRIES), ("tflite", TFLITE_ENTRIES)):
        check_output(os.path.join(args.export, name), args.overwrite, entries, source=args.output)


def _search(args, model, data, train_kwargs):
    """Run the keras-tuner search of `args.tune` and return its best model arguments."""
    from keras_textattn.tuning import load_config
    from keras_textattn.tuning import tune

    config = load_config(args.tune)
    if config.model != model:
        from keras_textattn.errors import UserError

        raise UserError(f"{args.tune} tunes {config.model}; this example trains {model}")
    config.encoder.update({name: train_kwargs[name] for name in ENCODER_LENGTHS if name in train_kwargs})
    directory = args.output.rstrip("/") + "-search"
    options = {name: value for name, value in train_kwargs.items() if name in SEARCH_DATA_OPTIONS}
    rows = tune(
        config,
        data,
        directory,
        preset="cpu" if args.small else "paper",
        max_trials=args.tune_trials,
        epochs=args.epochs,
        dtype_policy=args.dtype_policy,
        verbose=progress_verbosity(),
        **search_embeddings(model, args.small, train_kwargs),
        **options,
    )
    with open(os.path.join(directory, "best", "metrics.json")) as handle:
        best = json.load(handle)["model_kwargs"]
    print(f"Search: {len(rows)} trials in {directory}; training with the best: {best}")
    return best


def search_embeddings(model, small, train_kwargs):
    """`tune()`'s embedding arguments: those the run will train with (the example's, else the
    paper preset's, e.g. word2vec for LAMA and HCAN), so that the search chooses for them."""
    from keras_textattn.models import get_spec

    preset = get_spec(model).training_defaults("cpu" if small else "paper")
    return {
        "embeddings": train_kwargs.get("embeddings", preset.get("embeddings")),
        "freeze_embeddings": train_kwargs.get("freeze_embeddings", False),
    }
