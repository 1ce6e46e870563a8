"""`keras-textattn train`: its flags are `TrainConfig`'s fields (`common.add_config_flags`)."""

import dataclasses

from keras_textattn_cli.common import add_config_flags
from keras_textattn_cli.common import config_overrides
from keras_textattn_config import flags
from keras_textattn_config.checks import UserError
from keras_textattn_config.train_config import AUTO
from keras_textattn_config.train_config import CANDIDATES
from keras_textattn_config.train_config import GROUPS
from keras_textattn_config.train_config import MODELS
from keras_textattn_config.train_config import TrainConfig
from keras_textattn_config.train_config import check_model
from keras_textattn_config.train_config import cpu_devices_refusal
from keras_textattn_config.train_config import fields_of

CONFIG_FIELDS = tuple(field.name for field in dataclasses.fields(TrainConfig))


def add_parser(subcommand):
    train = subcommand("train", help="train a model and write a run folder")
    train.add_argument(
        "--model",
        help=f"{', '.join(MODELS)}, or {AUTO}: train {', '.join(CANDIDATES)} and keep the best on the "
        f"held-out data (the default; with --init-from: that run's model)",
    )
    train.add_argument(
        "--data",
        type=flags.path_argument,
        required=True,
        help="a TFDS name (e.g. imdb_reviews); a CSV/TSV, JSONL or TFRecord file (plain or .gz); "
        "a glob ('train-*.csv.gz') or a folder of such shards",
    )
    train.add_argument("--output", type=flags.path_argument, required=True, help="the run folder")
    for group, title in GROUPS:
        arguments = train.add_argument_group(title)
        add_config_flags(arguments, [field.name for field in fields_of(group)])
        if group == "distribution":
            arguments.add_argument(
                "--cpu-devices",
                type=flags.count,
                help="with --distribute mirrored: split the CPU into N logical devices (mirrored without GPUs)",
            )


def prepare(args):
    """`run`'s config from `train`'s flags: its values are checked here, before TensorFlow is imported."""
    if args.model not in (None, AUTO):
        check_model(args.model)
    refusal = cpu_devices_refusal(args.cpu_devices, args.distribute)
    if refusal:
        raise UserError(refusal)
    return {"config": TrainConfig(**config_overrides(args, CONFIG_FIELDS))}


def run(args, config):
    from keras_textattn import training

    metrics = training.train(model=args.model, data=args.data, output=args.output, config=config)
    score = "macro_f1" if metrics.get("multi_label") else "accuracy"
    values = ", ".join(f"{split} {value:.4f}" for split, value in metrics[score].items())
    said = "macro F1 (at the thresholds chosen on the validation split)" if score == "macro_f1" else "accuracy"
    print(f"Finished {metrics['model']}: {said} {values}. Results in {args.output}/ (metrics.json, model.keras)")
    if all(name.isdigit() for name in metrics["label_names"]):
        print(
            f"The classes are the file's integer labels, named {', '.join(metrics['label_names'][:5])}"
            f"{', ...' if len(metrics['label_names']) > 5 else ''}; --label-names gives them names"
        )
    return 0
