"""Training speed of every model at its papers' sizes against its cpu preset, on 2-core CPUs.

    python benchmarks/presets.py                # every model, IMDB-length texts (256 tokens)
    python benchmarks/presets.py --models lama cspan --length 64
    python benchmarks/presets.py --quick        # smoke check: two models, short texts, seconds

For each model of `keras_textattn.models.SPECS`: examples per second of a training step
(batch 32, Adam) at the builder's defaults (`preset="paper"`) and at `ModelSpec.cpu_defaults`
(`preset="cpu"`, the default of `train()`), on random token ids of one length, one process,
each timed for at least `--seconds` after a warm-up;
the ratio, and the minutes an epoch of IMDB's 25,000 training texts would take at each.
This is what `ModelSpec.cpu_defaults` is chosen by: a default run must finish in minutes.
"""

import argparse
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_textattn.models import SPECS  # noqa: E402

IMDB_TRAINING_TEXTS = 25000
QUICK = {"models": ["scalable_attention", "kim_cnn"], "length": 32, "steps": 2, "seconds": 0}


def examples_per_second(spec, preset, length, batch_size, steps, seconds, hierarchical_words=32):
    """Training examples per second of `spec`'s model at `preset`: epochs of `steps` batches
    after a warm-up, repeated until `seconds` have passed."""
    rng = np.random.default_rng(0)
    if spec.is_hierarchical():
        shape = {"sequence_length": hierarchical_words, "max_sentences": length // hierarchical_words}
        ids_shape = (batch_size * steps, shape["max_sentences"], hierarchical_words)
    else:
        shape = {"sequence_length": length, **({"bigram_buckets": 20000} if spec.bigrams else {})}
        ids_shape = (batch_size * steps, length)
    model = spec.build(2, vocabulary_size=20000, **shape, **spec.preset_arguments(preset))
    model.compile(keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy")
    ids = rng.integers(2, 20000, ids_shape)
    inputs = [ids, rng.integers(1, 20000, ids_shape)] if spec.bigrams else ids
    labels = rng.integers(0, 2, ids_shape[0])
    model.fit(inputs, labels, batch_size=batch_size, epochs=1, steps_per_epoch=2, verbose=0)  # tracing
    start, examples = time.perf_counter(), 0
    while examples == 0 or time.perf_counter() - start < seconds:
        model.fit(inputs, labels, batch_size=batch_size, epochs=1, verbose=0)
        examples += ids_shape[0]
    return examples / (time.perf_counter() - start), int(model.count_params())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=sorted(SPECS), default=list(SPECS))
    parser.add_argument("--length", type=int, default=256, help="tokens per text (HCAN: sentences of 32 words)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=8, help="training steps per timed epoch")
    parser.add_argument("--seconds", type=float, default=10, help="time each model and preset at least this long")
    parser.add_argument("--quick", action="store_true", help=f"smoke check: {QUICK}")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    print(
        "| model | paper parameters | cpu parameters | paper ex/s | cpu ex/s | cpu / paper | "
        "IMDB epoch, paper (min) | IMDB epoch, cpu (min) |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for name in args.models:
        (paper, paper_parameters), (cpu, cpu_parameters) = (
            examples_per_second(SPECS[name], preset, args.length, args.batch_size, args.steps, args.seconds)
            for preset in ("paper", "cpu")
        )
        print(
            f"| {name} | {paper_parameters:,} | {cpu_parameters:,} | {paper:.0f} | {cpu:.0f} | {cpu / paper:.1f}x "
            f"| {IMDB_TRAINING_TEXTS / paper / 60:.1f} | {IMDB_TRAINING_TEXTS / cpu / 60:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
