"""`keras-textattn evaluate` (`eval`): score a run on a labelled file."""

from keras_textattn_cli.common import add_file_format_flags
from keras_textattn_cli.common import add_long_text_flags
from keras_textattn_cli.common import longer_than_read_said
from keras_textattn_cli.common import text_column
from keras_textattn_config import flags


def add_parser(subcommand):
    evaluate = subcommand(
        "evaluate",
        aliases=["eval"],
        help="score a trained run on a labelled file: F1, confusion, mistakes (eval for short)",
    )
    evaluate.set_defaults(command="evaluate")  # `eval` runs as `evaluate`
    evaluate.add_argument(
        "--run",
        type=flags.path_argument,
        required=True,
        action="append",
        help="a run folder written by `train`, or a folder written by `export` (SavedModel or "
        "TFLite); repeat it to average the probabilities of several runs (an ensemble)",
    )
    evaluate.add_argument(
        "--data",
        type=flags.path_argument,
        required=True,
        help="a labelled CSV/TSV, JSONL or TFRecord file (plain or .gz)",
    )
    evaluate.add_argument(
        "--output",
        type=flags.path_argument,
        required=True,
        help="the report folder: metrics.json, report.md, confusion.png",
    )
    add_file_format_flags(evaluate, labels=True)
    evaluate.add_argument("--mistakes", type=int, default=20, help="the most confident mistakes to list")
    evaluate.add_argument("--batch-size", type=int, default=256, help="texts per model call")
    evaluate.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier report at --output (never a folder holding other files)",
    )
    add_long_text_flags(evaluate)


def run(args):
    from keras_textattn import inference

    result = inference.evaluate(
        args.run,
        args.data,
        args.output,
        text_column=text_column(args),
        label_column=flags.text_columns(args.label_column, "label"),
        header=not args.no_header,
        delimiter=args.delimiter,
        label_offset=args.label_offset,
        batch_size=args.batch_size,
        mistakes=args.mistakes,
        overwrite=args.overwrite,
        long_texts=args.long_texts,
        stride=args.stride,
        label_delimiter=args.label_delimiter,
    )
    for member in result.get("members", []):
        print(f"{member['run']} alone: accuracy {member['accuracy']:.4f}, macro F1 {member['macro_f1']:.4f}")
    if result.get("multi_label"):
        scores = (
            f"macro F1 {result['macro_f1']:.4f}, micro F1 {result['micro_f1']:.4f}, "
            f"subset accuracy {result['subset_accuracy']:.4f}"
        )
    else:
        scores = (
            f"accuracy {result['accuracy']:.4f}, macro F1 {result['macro_f1']:.4f}, "
            f"weighted F1 {result['weighted_f1']:.4f}"
        )
    print(f"{result['rows']} rows: {scores}. Report: {args.output}/report.md, confusion.png, metrics.json")
    said = longer_than_read_said(result["longer_than_read"], result["rows"], args.long_texts)
    if said:
        print(said)
    return 0
