"""Where one IMDB training epoch's time goes, per paper model at its IMDB recipe.

    python benchmarks/breakdown.py                        # every paper model, 30 steps each
    python benchmarks/breakdown.py --models scalable_attention --steps 60
    python benchmarks/breakdown.py --quick                # TREC, scalable attention, 3 steps (the test's)

`train()`'s own pieces (`with_recipe`, `fit_encoder`, `make_batches`, `build_classifier`,
`make_optimizer`) build each model as a run would; then, in this process, alone:

- encoder: choosing the lengths and counting the vocabulary on the training texts;
- encode: the first pass over the training batches, the texts encoded (later epochs read the
  ids from memory, the second pass);
- forward/backward: the gradients of one batch (one pass; adversarial training adds a second,
  from the perturbed embeddings on);
- a Keras training step (`fit`) with sparse embedding updates (the lazy optimizer) and with
  dense ones (Keras's): without adversarial training, a step less its forward/backward is the
  update and Keras's own work;
- validation: predicting the held-out tenth once (each epoch does).

Batches are as a run makes them: of the size `train()` chooses from the training rows and at the
rate it scales with it (`with_batch_for_rows`), and, for the models that read any length, of texts
cut to their batch's longest (`cuts_padding`); the embedding updates a run takes by default are
recorded (`run_updates`). Steps are timed on `--steps` batches after a warm-up, then scaled to the
epoch's steps. Results:
`benchmarks/results/breakdown.json` (`report.py` puts them in BENCHMARKS.md).
"""

import argparse
import json
import math
import os
import pathlib
import platform
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "breakdown.json"
# Each paper model's IMDB recipe (BENCHMARKS.md's "chosen recipe" rows) as `train()` options.
RECIPES = {
    "scalable_attention": dict(
        sequence_length=768, max_tokens=2000, bigram_buckets=200_000, lr_schedule="cosine", adversarial=0.05
    ),
    "dual_axial": dict(sequence_length=768, max_tokens=2000, lr_schedule="cosine"),
    "hcan": dict(max_tokens=2000, bigram_buckets=200_000, lr_schedule="cosine", adversarial=0.05, max_sentences=48),
    "lama": dict(sequence_length=768, max_tokens=2000, bigram_buckets=200_000, lr_schedule="cosine", adversarial=0.05),
    "cspan": dict(sequence_length=768, max_tokens=2000, bigram_buckets=200_000, lr_schedule="cosine"),
}


def _seconds(work):
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def import_seconds():
    """A fresh process's import of the training package (TensorFlow, Keras, tf-text)."""
    return _seconds(lambda: subprocess.run([sys.executable, "-c", "import keras_textattn.training"], check=True))


def step_seconds(classifier, batches, steps):
    """Seconds per Keras training step (`fit`) over `steps` batches, after a warm-up (batches cut
    to their longest text differ in shape: the warm-up traces them)."""
    classifier.fit(batches.take(min(steps, 10)), epochs=1, verbose=0, shuffle=False)
    return _seconds(lambda: classifier.fit(batches.take(steps), epochs=1, verbose=0, shuffle=False)) / steps


def gradient_seconds(classifier, loss_function, batches, steps):
    """Seconds per forward and backward pass (the gradients of the loss, no update)."""
    import tensorflow as tf

    @tf.function(reduce_retracing=True)  # as Keras's own step: batches cut to their longest differ in shape
    def gradients(ids, labels):
        with tf.GradientTape() as tape:
            loss = loss_function(labels, classifier(ids, training=True))
        grads = tape.gradient(loss, classifier.trainable_variables)
        return [tf.reduce_sum(g.values if isinstance(g, tf.IndexedSlices) else g) for g in grads]

    inputs = list(batches.take(steps))
    for batch in inputs:  # the warm-up traces each shape
        gradients(*batch)
    return _seconds(lambda: [gradients(*batch) for batch in inputs]) / steps


def measure(model, steps, data_dir, dataset="imdb", seed=0):
    """The breakdown of one epoch of `model` at its IMDB recipe on the training split of `dataset`
    in `data_dir` (a dict of seconds and sizes)."""
    import keras

    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets import inference_batch_size
    from keras_textattn.datasets import load_labelled_data
    from keras_textattn.datasets import make_batches
    from keras_textattn.models import get_spec
    from keras_textattn.training.adversarial import use_adversarial_training
    from keras_textattn.training.model_setup import accept_shorter_ids
    from keras_textattn.training.model_setup import build_classifier
    from keras_textattn.training.model_setup import classifier_loss
    from keras_textattn.training.model_setup import compile_classifier
    from keras_textattn.training.model_setup import cuts_padding
    from keras_textattn.training.model_setup import embedding_updates
    from keras_textattn.training.model_setup import fit_encoder
    from keras_textattn.training.model_setup import make_optimizer
    from keras_textattn.training.model_setup import with_batch_for_rows
    from keras_textattn.training.model_setup import with_recipe
    from keras_textattn_config.train_config import TrainConfig

    spec = get_spec(model)
    _, config = with_recipe(spec, TrainConfig(seed=seed, verbose=0, **RECIPES[model]))
    start = time.perf_counter()
    data, _ = load_labelled_data(LocalFile(str(data_dir / dataset / "train.csv.gz")), seed=seed)
    rows = dict(data.rows)
    load = time.perf_counter() - start
    config, _ = with_batch_for_rows(config, rows["train"], scale_rate=True)  # as train() without --batch-size
    model_kwargs = spec.preset_arguments(config.preset)
    start = time.perf_counter()
    encoder = fit_encoder(spec, config, model_kwargs, data["train"], rows["train"])
    encoder_seconds = time.perf_counter() - start
    cut = cuts_padding(spec, encoder, config, rows["train"])
    train = make_batches(
        data["train"], encoder, config.batch_size, shuffle=True, seed=seed, rows=rows["train"], cut_padding=cut
    )
    validation = make_batches(
        data["validation"], encoder, inference_batch_size(config.batch_size), rows=rows["validation"], cut_padding=cut
    )
    encode, cached = (_seconds(lambda: sum(1 for _ in train)) for _ in range(2))
    keras.utils.set_random_seed(seed)
    classifier = build_classifier(spec, data.num_classes, encoder, model_kwargs, {})
    if cut:
        accept_shorter_ids(classifier)
    forward_backward = gradient_seconds(classifier, classifier_loss(config.label_smoothing), train, steps)
    step = {}
    for updates in ("sparse", "dense"):
        compile_classifier(classifier, make_optimizer(config, updates))
        classifier.optimizer.build(classifier.trainable_variables)
        if config.adversarial:
            use_adversarial_training(classifier, config.adversarial)
        step[updates] = step_seconds(classifier, train, steps)
    classifier.predict(validation.take(2), verbose=0)
    steps_per_epoch = math.ceil(rows["train"] / config.batch_size)
    return {
        "model": model,
        "dataset": dataset,
        "rows": rows["train"],
        "recipe": RECIPES[model],
        "batch_size": config.batch_size,
        "cut_padding": cut,
        "run_updates": embedding_updates(config, classifier),
        "steps_per_epoch": steps_per_epoch,
        "steps_timed": steps,
        "parameters": int(classifier.count_params()),
        "load_seconds": load,
        "encoder_seconds": encoder_seconds,
        "encode_seconds": encode,
        "cached_pass_seconds": cached,
        "forward_backward_seconds": forward_backward * steps_per_epoch,
        "sparse_epoch_seconds": step["sparse"] * steps_per_epoch,
        "dense_epoch_seconds": step["dense"] * steps_per_epoch,
        # A step less its forward and backward pass: the update and Keras's own work. Not with adversarial
        # training, whose second pass (from the perturbed embeddings on) costs less than a whole one.
        "dense_optimizer_seconds": None if config.adversarial else (step["dense"] - forward_backward) * steps_per_epoch,
        "validation_seconds": _seconds(lambda: classifier.predict(validation, verbose=0)),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=list(RECIPES), default=list(RECIPES))
    parser.add_argument("--steps", type=int, default=30, help="training steps timed per model and optimizer")
    parser.add_argument(
        "--data-dir", type=pathlib.Path, default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", DEFAULT_DATA))
    )
    parser.add_argument("--dataset", default="imdb", help="a folder of --data-dir holding a train.csv.gz")
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="TREC, scalable attention, 3 steps")
    args = parser.parse_args(argv)
    if args.quick:
        args.dataset, args.models, args.steps = "trec", ["scalable_attention"], 3
    if not (args.data_dir / args.dataset / "train.csv.gz").exists():
        parser.error(f"no {args.dataset}/train.csv.gz in {args.data_dir}; pass --data-dir or set KERAS_TEXTATTN_DATA")
    rows = {"import_seconds": import_seconds(), "machine": f"{os.cpu_count()} CPU cores ({platform.machine()})"}
    rows["models"] = []
    for model in args.models:
        row = measure(model, args.steps, args.data_dir, args.dataset)
        rows["models"].append(row)
        print(
            f"{model}: encoder {row['encoder_seconds']:.1f} s, encode {row['encode_seconds']:.1f} s, "
            f"forward/backward {row['forward_backward_seconds']:.0f} s, epoch {row['sparse_epoch_seconds']:.0f} s "
            f"(dense updates {row['dense_epoch_seconds']:.0f} s: "
            f"{row['dense_epoch_seconds'] / row['sparse_epoch_seconds']:.2f}x), "
            f"validation {row['validation_seconds']:.1f} s",
            flush=True,
        )
    rows["date"] = time.strftime("%Y-%m-%d")
    args.results.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
