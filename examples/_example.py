"""What the example scripts share: their command-line flags and the call to `train()`.

Each example passes the paper's settings; `--small` shrinks the model and the text
length so that a run finishes in minutes on a 2-core CPU.
"""

import argparse
import json
import os


def parse_args(description, default_output):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", help="a local CSV file (header label,text) instead of downloading the TFDS dataset")
    parser.add_argument("--test-data", help="a local test file (same format as --data unless the example says otherwise)")
    parser.add_argument("--output", default=default_output, help="the run folder")
    parser.add_argument("--epochs", type=int, help="default: the example's")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--small", action="store_true", help="CPU-sized model and texts")
    parser.add_argument("--overwrite", action="store_true")
    return parser.parse_args()


def run(args, model, model_kwargs, small_kwargs, data, epochs, **train_kwargs):
    """Train and print where the results are."""
    from keras_textattn.training import train

    metrics = train(
        model=model,
        data=data,
        output=args.output,
        model_kwargs={**model_kwargs, **(small_kwargs if args.small else {})},
        epochs=args.epochs or epochs,
        batch_size=args.batch_size,
        overwrite=args.overwrite,
        **train_kwargs,
    )
    print(json.dumps(metrics["accuracy"], indent=2))
    print(f"Results: {os.path.abspath(args.output)} (metrics.json, model.keras, encoder.keras, logs/)")
    return metrics
