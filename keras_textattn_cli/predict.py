"""`keras-textattn predict`: label texts, or a file's rows, with a run or an export."""

import argparse
import itertools

from keras_textattn_cli.common import TextsAreArguments
from keras_textattn_cli.common import add_file_format_flags
from keras_textattn_cli.common import add_long_text_flags
from keras_textattn_cli.common import check_data_options
from keras_textattn_cli.common import given_texts
from keras_textattn_cli.common import longer_than_read_said
from keras_textattn_cli.common import text_column
from keras_textattn_config import flags


def add_parser(subcommand):
    predict = subcommand("predict", help="label texts with a trained run (or its SavedModel or TFLite export)")
    predict.add_argument(
        "--run",
        type=flags.path_argument,
        required=True,
        action="append",
        help="a run folder written by `train`, or a folder written by `export` (SavedModel or "
        "TFLite); repeat it to average the probabilities of several runs (an ensemble)",
    )
    predict.add_argument(
        "texts",
        nargs="*",
        help="texts to label (printed); - reads them from standard input, "
        "one per line, labelled in batches as they come",
    )
    predict.add_argument("--text", nargs="*", action=TextsAreArguments, help=argparse.SUPPRESS)
    predict.add_argument(
        "--data",
        type=flags.path_argument,
        help="a CSV/TSV, JSONL or TFRecord file (plain or .gz) to label, read in batches",
    )
    predict.add_argument(
        "--output",
        type=flags.path_argument,
        help="with --data: the predictions, .csv or .jsonl (one row per input row, in order, written atomically)",
    )
    add_file_format_flags(predict, labels=False)
    predict.add_argument(
        "--id-column", type=flags.column, help="carried over to the output (default: a column named id)"
    )
    predict.add_argument("--top-k", type=int, default=1, help="the most probable labels to give per text")
    predict.add_argument("--batch-size", type=int, default=256, help="texts per model call")
    predict.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    predict.add_argument("--quiet", action="store_true", help="no progress")
    add_long_text_flags(predict)


def run(args):
    from keras_textattn import inference
    from keras_textattn.errors import UserError
    from keras_textattn.errors import check_batch_size

    if args.data and args.texts:
        raise UserError("give texts to label or --data FILE, not both")
    if not args.data and not args.texts:
        raise UserError(
            "give texts to label (- reads them from standard input, one per line), or --data FILE with --output"
        )
    check_data_options(
        args,
        ("--output", "--overwrite", "--id-column", "--text-column", "--no-header", "--delimiter"),
        hint=" (texts given here are printed; > FILE keeps them)",
    )
    if args.texts:
        check_batch_size(args.batch_size)
        classifier = inference.Classifier(args.run, long_texts=args.long_texts, stride=args.stride)
        texts = given_texts(args)
        while batch := list(itertools.islice(texts, args.batch_size)):
            for text, row in zip(batch, classifier.predict(batch, top_k=args.top_k, batch_size=args.batch_size)):
                top = ", ".join(f"{label} {p:.3f}" for label, p in row["top"])
                if "labels" in row:  # multi-label: the labels decided, then the top k
                    top = f"[{', '.join(row['labels'])}]  {top}"
                print(f"{top}  <- {text[:60]!r}", flush=True)
        return 0
    if not args.output:
        raise UserError("--data needs --output (a .csv or .jsonl file for the predictions)")
    report = inference.predict_file(
        args.run,
        args.data,
        args.output,
        text_column=text_column(args),
        id_column=args.id_column,
        header=not args.no_header,
        delimiter=args.delimiter,
        top_k=args.top_k,
        batch_size=args.batch_size,
        overwrite=args.overwrite,
        verbose=0 if args.quiet else 1,
        long_texts=args.long_texts,
        stride=args.stride,
    )
    print(f"Predicted {report['rows']} rows of {args.data} into {report['path']}")
    said = longer_than_read_said(report["longer_than_read"], report["rows"], args.long_texts)
    if said:
        print(said)
    return 0
