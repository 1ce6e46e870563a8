"""What adversarial training (`use_adversarial_training`) costs per training step, per paper model.

    python benchmarks/adversarial_cost.py                       # every paper model, AG News texts
    python benchmarks/adversarial_cost.py --models hcan lama --length 256
    python benchmarks/adversarial_cost.py --quick               # LAMA, 128 short texts: a smoke check

Each model at its cpu preset with 20,000 hashed bigram buckets (as the IMDB recipes), on
`--length` tokens (HCAN: 8 sentences of `--length` / 8 words), is trained one
epoch on the first `--texts` AG News training texts, plain and then adversarially (epsilon
0.05), each after a warm-up epoch (tracing), in the same process, `--repeats` times; the ratio
of the two fastest epochs is the step's cost. Prints one JSON line per model. Needs ../shared/data
(or KERAS_TEXTATTN_DATA).
"""

import argparse
import json
import os
import pathlib
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[1] / "shared" / "data"
PAPER_MODELS = ["scalable_attention", "dual_axial", "hcan", "lama", "cspan"]


def measure(name, texts, labels, length, repeats):
    """Seconds of one training epoch of `name` (the fastest of `repeats`), plain and adversarial,
    and the ratio."""
    import keras
    import tensorflow as tf

    from keras_textattn.models import get_spec
    from keras_textattn.text import TextEncoder
    from keras_textattn.training import use_adversarial_training

    spec = get_spec(name)
    hierarchical = spec.is_hierarchical()
    encoder = TextEncoder(
        **spec.encoder_options(
            None,
            max_tokens=20000,
            max_sentences=8 if hierarchical else None,
            sequence_length=length // 8 if hierarchical else length,
            bigram_buckets=20000,
        )
    )
    encoder.adapt(texts)
    encoded = encoder(tf.constant(texts))
    ids = tuple(e.numpy() for e in encoded) if isinstance(encoded, tuple) else encoded.numpy()
    seconds = {}
    for adversarial in (False, True):
        keras.utils.set_random_seed(0)
        model = spec.build(
            4,
            vocabulary_size=encoder.vocabulary_size(),
            **spec.shape_arguments(encoder),
            **spec.preset_arguments("cpu"),
        )
        model.compile("adam", "sparse_categorical_crossentropy")
        if adversarial:
            use_adversarial_training(model, 0.05)
        model.fit(ids, labels, batch_size=32, epochs=1, verbose=0)  # warm-up (tracing)
        epochs = []
        for _ in range(repeats):
            start = time.perf_counter()
            model.fit(ids, labels, batch_size=32, epochs=1, verbose=0)
            epochs.append(time.perf_counter() - start)
        seconds["adversarial" if adversarial else "plain"] = min(epochs)
    return {
        "model": name,
        "length": length,
        "texts": len(texts),
        **seconds,
        "ratio": seconds["adversarial"] / seconds["plain"],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=PAPER_MODELS, choices=PAPER_MODELS)
    parser.add_argument("--length", type=int, default=64, help="tokens per text (HCAN: 8 sentences of length / 8)")
    parser.add_argument("--texts", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="LAMA only, 128 texts of 32 tokens, one repeat")
    parser.add_argument(
        "--data-dir", type=pathlib.Path, default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", DEFAULT_DATA))
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.models, args.texts, args.length, args.repeats = ["lama"], 128, 32, 1
    path = args.data_dir / "ag_news" / "train_sample_5k.csv.gz"
    if not path.exists():
        raise SystemExit(f"{path} not found: give --data-dir or set KERAS_TEXTATTN_DATA")
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets.formats import read_labelled_texts

    texts, labels, _, _ = read_labelled_texts(LocalFile(path))
    texts, labels = texts[: args.texts], np.array([int(label) for label in labels[: args.texts]])
    for name in args.models:
        print(json.dumps(measure(name, texts, labels, args.length, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
