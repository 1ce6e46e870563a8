"""`keras-textattn vectors`: word2vec trained on texts, written for `train --embeddings`."""

from keras_textattn_cli.common import add_file_format_flags
from keras_textattn_cli.common import text_column
from keras_textattn_config import flags


def add_parser(subcommand):
    vectors = subcommand(
        "vectors", help="train word2vec on texts (labelled or not) and write a vectors file for train --embeddings"
    )
    vectors.add_argument(
        "--data",
        type=flags.path_argument,
        required=True,
        action="append",
        help="a CSV/TSV, JSONL or TFRecord file (plain or .gz) of texts, a glob or a folder of them; repeat for more. "
        "Never the texts a model will be tested on",
    )
    vectors.add_argument(
        "--output", type=flags.path_argument, required=True, help="the vectors file to write (word2vec text format)"
    )
    vectors.add_argument(
        "--dimension",
        required=True,
        type=int,
        help="the vectors' size: the embedding size of the model (cpu preset: 64, dual_axial 32)",
    )
    add_file_format_flags(vectors, labels=False)
    vectors.add_argument(
        "--lines", action="store_true", help="the files are plain text (plain or .gz), one text per line, no columns"
    )
    vectors.add_argument("--min-count", type=int, default=5, help="rarer words get no vector")
    vectors.add_argument(
        "--epochs", type=int, help="passes over the texts (default: about 10 million token updates, 5 to 50 passes)"
    )
    vectors.add_argument("--window", type=int, default=5, help="words on each side that a word predicts")
    vectors.add_argument("--seed", type=int, default=0)
    vectors.add_argument("--overwrite", action="store_true", help="replace an existing --output")


def run(args):
    from keras_textattn.errors import UserError
    from keras_textattn.text import write_word2vec

    if args.lines and (args.text_column or args.no_header or args.delimiter):
        raise UserError(
            "--lines reads each line as one text; --text-column, --no-header and --delimiter are for "
            "CSV/TSV, JSONL and TFRecord files"
        )
    report = write_word2vec(
        args.data,
        args.output,
        args.dimension,
        text_column=text_column(args),
        header=not args.no_header,
        delimiter=args.delimiter,
        lines=args.lines,
        seed=args.seed,
        min_count=args.min_count,
        epochs=args.epochs,
        window=args.window,
        overwrite=args.overwrite,
    )
    print(
        f"Wrote {report['words']} word vectors of {report['dimension']} dimensions (word2vec, {report['epochs']} "
        f"passes over {report['tokens']} tokens) to {report['path']}; use them with --embeddings {report['path']}"
    )
    return 0
