"""`keras-textattn export`: a run as a SavedModel (TF Serving), a TFLite or an ONNX folder, verified against Keras."""

from keras_textattn_cli.common import add_file_format_flags
from keras_textattn_cli.common import check_data_options
from keras_textattn_cli.common import text_column
from keras_textattn_config import flags


def add_parser(subcommand):
    export = subcommand("export", help="export a run as a SavedModel (TF Serving), a TFLite or an ONNX model")
    export.add_argument(
        "--run",
        type=flags.path_argument,
        required=True,
        action="append",
        help="a run folder written by `train`; repeat it to export an ensemble that averages the "
        "runs' probabilities (saved_model only)",
    )
    export.add_argument(
        "--format",
        required=True,
        choices=["saved_model", "tflite", "onnx"],
        help="onnx needs pip install 'keras-textattn[onnx]'",
    )
    export.add_argument(
        "--output",
        type=flags.path_argument,
        required=True,
        help="the folder to write (TF Serving: <models>/<name>/<version>)",
    )
    export.add_argument(
        "--quantization",
        choices=["none", "dynamic", "float16", "int8"],
        default="none",
        help="tflite only: int8 weights (dynamic), float16 weights, or int8 weights and activations "
        "(int8: for int8-only accelerators; needs --calibration-data)",
    )
    export.add_argument(
        "--calibration-data",
        type=flags.path_argument,
        help="with --quantization int8: texts like those the model will read (the training file "
        "will do), a CSV/TSV, JSONL or TFRecord file; 200 of its rows calibrate the ranges",
    )
    export.add_argument(
        "--long-texts",
        choices=["cut", "windows"],
        default="cut",
        help="saved_model only: what serving_default does with a text longer than the model reads: cut "
        "(its start read) or windows (read whole in overlapping windows, their probabilities averaged)",
    )
    export.add_argument(
        "--stride",
        type=flags.count,
        help="with --long-texts windows: tokens (HCAN: sentences) from one window to the next (default: half "
        "the model's length)",
    )
    add_file_format_flags(export, labels=False)
    export.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier export at --output (never a folder holding other files)",
    )


def run(args):
    from keras_textattn import export
    from keras_textattn.datasets.formats import LocalFile
    from keras_textattn.errors import UserError

    check_data_options(args, ("--text-column", "--no-header", "--delimiter"), data="--calibration-data")
    if args.calibration_data and args.quantization != "int8":
        raise UserError("--calibration-data goes with --quantization int8 only")
    if args.format != "tflite" and args.quantization != "none":
        raise UserError("--quantization applies to --format tflite only")
    if args.format != "saved_model" and (args.long_texts != "cut" or args.stride is not None):
        raise UserError(
            f"--long-texts windows and --stride are for --format saved_model: a {args.format} client tokenises "
            "the texts itself and cuts the windows (ClientTokenizer.windows; predict and evaluate take "
            "--long-texts windows with the exported folder)"
        )
    if args.format == "saved_model":  # each takes one run or a list (a repeated --run)
        report = export.saved_model(
            args.run, args.output, long_texts=args.long_texts, stride=args.stride, overwrite=args.overwrite
        )
    elif args.format == "onnx":
        report = export.onnx(args.run, args.output, overwrite=args.overwrite)
    else:
        if args.quantization == "int8" and not args.calibration_data:
            raise UserError(
                "--quantization int8 calibrates on texts like those the model will read: give "
                "--calibration-data FILE (the training file will do)"
            )
        calibration = (
            LocalFile(
                args.calibration_data,
                text_column=text_column(args),
                header=not args.no_header,
                delimiter=args.delimiter,
            )
            if args.calibration_data
            else None
        )
        report = export.tflite(
            args.run,
            args.output,
            quantization=None if args.quantization == "none" else args.quantization,
            calibration_texts=calibration,
            overwrite=args.overwrite,
        )
    details = ", ".join(
        f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
        for key, value in report.items()
        if key != "path"
    )
    print(f"Exported {' + '.join(args.run)} to {report['path']} ({args.format}); verified against Keras: {details}")
    return 0
