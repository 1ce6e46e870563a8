"""`keras-textattn explain`: what a trained model attends to, printed and as HTML, PNG and tables."""

import argparse
import itertools
import os

from keras_textattn_cli.common import TextsAreArguments
from keras_textattn_cli.common import add_file_format_flags
from keras_textattn_cli.common import add_long_text_flags
from keras_textattn_cli.common import check_data_options
from keras_textattn_cli.common import given_texts
from keras_textattn_cli.common import text_column
from keras_textattn_config import flags


def add_parser(subcommand):
    explain = subcommand("explain", help="show what a trained model attends to")
    explain.add_argument(
        "--run", type=flags.path_argument, required=True, action="append", help="a run folder written by `train`"
    )
    explain.add_argument("texts", nargs="*", help="texts to explain; - reads them from standard input, one per line")
    explain.add_argument("--text", nargs="*", action=TextsAreArguments, help=argparse.SUPPRESS)
    explain.add_argument(
        "--data",
        type=flags.path_argument,
        help="also explain the texts of a CSV/TSV, JSONL or TFRecord file (plain or .gz)",
    )
    add_file_format_flags(explain, labels=False)
    explain.add_argument("--limit", type=int, default=1000, help="at most this many rows of --data")
    explain.add_argument("--show", type=int, default=20, help="texts printed (the files written have them all)")
    explain.add_argument("--html", type=flags.path_argument, help="write a self-contained HTML page")
    explain.add_argument("--png", type=flags.path_argument, help="write a heatmap of the first text")
    explain.add_argument(
        "--top-tokens-csv", type=flags.path_argument, help="write the top attended tokens per predicted class (CSV)"
    )
    explain.add_argument("--top-tokens-md", type=flags.path_argument, help="the same as a markdown table")
    explain.add_argument("--top", type=int, default=10, help="tokens per class in the tables")
    explain.add_argument(
        "--label",
        help="keep the texts predicted with this label (of a multi-label run: among their labels)",
    )
    add_long_text_flags(explain)
    explain.add_argument("--overwrite", action="store_true", help="replace existing files of --html, --png, ...")


def run(args):
    from keras_textattn._files import check_output_file
    from keras_textattn._files import refuse_writing_over
    from keras_textattn._files import write_text
    from keras_textattn.datasets.formats import LocalFile
    from keras_textattn.datasets.formats import text_batches
    from keras_textattn.datasets.streaming import each_file
    from keras_textattn.errors import UserError
    from keras_textattn.errors import check_whole
    from keras_textattn.explain import explain
    from keras_textattn.explain import to_html
    from keras_textattn.explain import to_png
    from keras_textattn.explain import top_tokens
    from keras_textattn.explain import write_top_tokens
    from keras_textattn.explain.render import image_format

    # Before the slow part: the numbers, and the files to write (each once, none a folder, none
    # replaced without --overwrite, an image format matplotlib draws).
    check_data_options(args, ("--text-column", "--no-header", "--delimiter"))
    check_whole("limit", args.limit)
    check_whole("top", args.top)
    check_whole("show", args.show, minimum=0)
    written = [path for path in (args.html, args.png, args.top_tokens_csv, args.top_tokens_md) if path]
    if len({os.path.abspath(path) for path in written}) < len(written):
        raise UserError(f"give each file its own path; got {', '.join(written)}")
    for path in written:
        check_output_file(path, args.overwrite)
    if args.png:
        image_format(args.png)
    texts = list(given_texts(args))
    if args.data:
        files = each_file(
            LocalFile(args.data, text_column=text_column(args), header=not args.no_header, delimiter=args.delimiter)
        )
        for path in written:
            refuse_writing_over(path, [file.path for file in files])
        texts += itertools.islice(
            (text for file in files for _, batch in text_batches(file, 256) for text in batch), args.limit
        )
    if not texts:
        raise UserError(
            f"{args.data}: no data rows"
            if args.data
            # as evaluate says; not "give texts"
            else "standard input held no texts (one per line)"
            if args.texts == ["-"]
            else "give texts to explain, or --data FILE"
        )
    explanations = explain(args.run, texts, long_texts=args.long_texts, stride=args.stride)  # one run: not several
    if args.label is not None:
        known = list(explanations[0].probabilities)
        if args.label not in known:
            raise UserError(f"--label {args.label!r} is not a label of the run; its labels: {', '.join(known)}")
        explanations = [e for e in explanations if args.label in e.predicted()]
        if not explanations:
            raise UserError(f"no text given is predicted {args.label!r}; nothing to explain")
    shown = explanations[: args.show]
    print("predicted label (its probability): the 5 most attended tokens (mean over heads) <- the text's start")
    for explanation in shown:
        weights = next(iter(explanation.attention.values())).mean(0) if explanation.attention else []
        top = sorted(zip(weights, (t["token"] for t in explanation.tokens)), reverse=True)[:5]
        said = [f"{label} ({explanation.probabilities[label]:.3f})" for label in explanation.predicted()]
        said = said or ["no label"]
        print(f"{', '.join(said)}: {' '.join(token for _, token in top)}  <- {explanation.text[:60]!r}")
    if len(shown) < len(explanations):
        print(f"({len(shown)} of {len(explanations)} texts shown; --show N for more, --html for every map)")
    if args.html:
        write_text(args.html, to_html(explanations, title=f"Attention of {args.run[0]}"))
    if args.png:
        to_png(explanations[0], args.png)
    if args.top_tokens_csv or args.top_tokens_md:
        write_top_tokens(top_tokens(explanations, args.top), args.top_tokens_csv, args.top_tokens_md)
    if written:
        print("Wrote " + ", ".join(written))
    return 0
