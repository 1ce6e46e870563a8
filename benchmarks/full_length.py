"""Whole texts at the papers' sizes, trained to their best epoch: is the CPU budget why we trail?

BENCHMARKS.md's IMDB rows read the first 256 tokens (768 for scalable attention) with each
model's cpu preset, because the papers' sizes and whole reviews do not train in hours on 2
cores. This script takes those limits away on a machine that can afford it (an accelerator,
any Keras backend): the papers' sizes (`preset="paper"`), texts up to `--length` tokens,
word2vec embeddings, and `accuracy.py`'s `w2v_stop_on_accuracy` recipe (plateau schedule,
clipping at norm 1, early stopping on the held-out 10%'s accuracy, best weights kept).

It runs in two steps, because the text encoder and word2vec need TensorFlow (here) and an
accelerator may have only JAX or PyTorch:

    python benchmarks/full_length.py encode --dataset imdb --length 1024 --output ids.npz
    KERAS_BACKEND=jax python benchmarks/full_length.py fit ids.npz --models lama scalable_attention
    python benchmarks/full_length.py --quick        # TREC, both steps, one epoch (CI runs this)

`encode` writes the token ids (uint16, the 20,000-token vocabulary `train()` uses), the labels
and the word2vec embedding matrix (`--dimension`, float16; `embedding_matrix`'s scale) into one
compressed `.npz`. `fit` sets every model's embedding size to that dimension (100: LAMA's and
HCAN's; CSPAN's paper uses 300-d GloVe, which this offline setting does not have), trains on a
seeded 90% of the training split through `logits_model` (from the logits: on JAX and PyTorch a
saturated softmax stops learning), and measures the test split once, appending a row per model
and seed to `--results`. Flat models only (HCAN reads `(sentences, words)` ids); no hashed
bigrams (dual-axial's paper input): the token ids alone.
"""

import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np
from accuracy import DEFAULT_DATA
from accuracy import VOCABULARY
from accuracy import builder_arguments
from accuracy import load
from accuracy import seed_number


def encode(dataset_name, data_dir, length, dimension, output, seed=0):
    """Token ids and a word2vec matrix for `dataset_name`'s train and test splits (TensorFlow)."""
    from keras_textattn.text import TextEncoder
    from keras_textattn.text.vectors import coverage
    from keras_textattn.text.vectors import embedding_matrix
    from keras_textattn.text.vectors import train_word2vec

    dataset = load(pathlib.Path(data_dir), dataset_name)
    encoder = TextEncoder(max_tokens=VOCABULARY, sequence_length=length)
    encoder.adapt(dataset["train"])
    arrays, counts = {}, []
    for split in ("train", "test"):
        ids, labels = [], []
        for texts, batch_labels in dataset[split].batch(512).as_numpy_iterator():
            ids.append(np.asarray(encoder(texts)))
            labels.append(batch_labels)
            if split == "train":
                counts.append(encoder.count_tokens(texts))
        arrays[f"{split}_ids"] = np.concatenate(ids).astype(np.uint16)
        arrays[f"{split}_labels"] = np.concatenate(labels).astype(np.int64)
    longer = float(np.mean(np.concatenate(counts) > length))
    vectors = train_word2vec(encoder, dataset["train"], dimension, seed=seed)
    matrix, covered = embedding_matrix(encoder.get_vocabulary(), vectors, dimension, seed=seed)
    np.savez_compressed(
        output,
        embeddings=matrix.astype(np.float16),
        num_classes=dataset.num_classes,
        length=length,
        dataset=dataset_name,
        **arrays,
    )
    print(
        f"{output}: {len(arrays['train_ids'])} / {len(arrays['test_ids'])} texts of {length} ids; "
        f"{longer:.1%} of the training texts are longer; word2vec {dimension}-d covers {coverage(covered):.1%}"
    )


def fit(ids_file, models, seeds, epochs, batch_size, learning_rate, patience, results):
    """Train each model of `models` (accuracy.py's row names, e.g. "lama" = LAMA+ctx) from `ids_file`."""
    import keras

    from keras_textattn.models import get_spec
    from keras_textattn.models import logits_model

    data = np.load(ids_file)
    matrix = data["embeddings"].astype(np.float32)
    num_classes, length = int(data["num_classes"]), int(data["length"])
    device = str(keras.backend.backend())
    if device == "jax":
        import jax

        device += f" on {jax.devices()[0].device_kind}"
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(len(data["train_ids"]))
        held_out = len(order) // 10
        fit_rows, validation_rows = order[held_out:], order[:held_out]
        for row in models:
            name, options = builder_arguments(row)
            spec = get_spec(name)
            if spec.is_hierarchical(options):
                raise SystemExit(f"error: {name} reads (sentences, words) ids; this script gives flat ids")
            keras.utils.set_random_seed(seed)
            model = spec.build(
                num_classes,
                vocabulary_size=len(matrix),
                sequence_length=length,
                **{**spec.preset_arguments("paper"), **options, spec.embedding_size_argument: matrix.shape[1]},
            )
            model.get_layer("embedding").embeddings.assign(matrix)
            model = logits_model(model)  # a saturated softmax stops learning on JAX and PyTorch
            model.compile(
                keras.optimizers.Adam(learning_rate, global_clipnorm=1.0),
                keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"],
            )
            callbacks = [
                keras.callbacks.EarlyStopping("val_accuracy", patience=patience, restore_best_weights=True),
                keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=1, min_lr=learning_rate / 100),
            ]
            start = time.perf_counter()
            history = model.fit(
                data["train_ids"][fit_rows],
                data["train_labels"][fit_rows],
                batch_size=batch_size,
                epochs=epochs,
                callbacks=callbacks,
                verbose=2,
                validation_data=(data["train_ids"][validation_rows], data["train_labels"][validation_rows]),
            )
            seconds = time.perf_counter() - start
            _, accuracy = model.evaluate(data["test_ids"], data["test_labels"], batch_size=256, verbose=0)
            validation = history.history["val_accuracy"]
            result = {
                "dataset": str(data["dataset"]),
                "model": f"{row}+paper_w2v@{length}",
                "seed": seed,
                "accuracy": float(accuracy),
                "validation_accuracy": float(max(validation)),
                "best_epoch": int(np.argmax(validation)),
                "epochs_trained": len(validation),
                "train_seconds": seconds,
                "parameters": int(model.count_params()),
                "device": device,
                "batch_size": batch_size,
                "loss_on": "logits",
            }
            print(json.dumps(result), flush=True)
            with open(results, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(result) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="TREC, both steps, one epoch, scalable attention")
    steps = parser.add_subparsers(dest="step")
    encoding = steps.add_parser("encode", help="token ids and word2vec vectors (TensorFlow)")
    encoding.add_argument("--dataset", default="imdb")
    encoding.add_argument("--data-dir", default=os.environ.get("KERAS_TEXTATTN_DATA", DEFAULT_DATA))
    encoding.add_argument("--length", type=int, default=1024, help="tokens per text (longer texts are cut)")
    encoding.add_argument("--dimension", type=int, default=100, help="word2vec's (and every model's) embedding size")
    encoding.add_argument("--output", required=True)
    fitting = steps.add_parser("fit", help="train and test the models (any Keras backend)")
    fitting.add_argument("ids")
    fitting.add_argument("--models", nargs="+", default=["lama", "scalable_attention", "dual_axial", "cspan"])
    fitting.add_argument("--seeds", nargs="+", type=seed_number, default=[0])
    fitting.add_argument("--epochs", type=int, default=20, help="the most epochs (early stopping decides)")
    fitting.add_argument("--patience", type=int, default=2)
    fitting.add_argument("--batch-size", type=int, default=32)
    fitting.add_argument("--learning-rate", type=float, default=1e-3)
    fitting.add_argument("--results", default=str(pathlib.Path(__file__).parent / "results" / "full_length.jsonl"))
    args = parser.parse_args(argv)
    if args.quick:
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            ids = os.path.join(folder, "trec.npz")
            encode("trec", os.environ.get("KERAS_TEXTATTN_DATA", DEFAULT_DATA), 32, 16, ids)
            fit(ids, ["scalable_attention"], [0], 1, 32, 1e-3, 1, os.path.join(folder, "rows.jsonl"))
    elif args.step == "encode":
        encode(args.dataset, args.data_dir, args.length, args.dimension, args.output)
    elif args.step == "fit":
        fit(
            args.ids,
            args.models,
            args.seeds,
            args.epochs,
            args.batch_size,
            args.learning_rate,
            args.patience,
            args.results,
        )
    else:
        parser.error("give a step (encode or fit) or --quick")


if __name__ == "__main__":
    sys.exit(main())
