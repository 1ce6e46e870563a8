"""Texts longer than the model reads: cut, or read in windows (`predict --long-texts windows`).

Per dataset, a model is trained at `--length` tokens (`train()`'s defaults otherwise) on the
training split less a seeded tenth that this script holds out. On that tenth, three ways to read
a text longer than the model reads are scored: cut (its start), the mean of its windows'
probabilities (what `Classifier(long_texts="windows")` does), and the mean of their
log-probabilities (a geometric mean). The test split is read once, after the choice: cut against
windows, with the CPU seconds per text of each. `--training windows` trains on a window of each
long text drawn at random each epoch (`train --sample-windows`) rather than on its start.

    python benchmarks/long_texts.py --datasets imdb r8
    python benchmarks/long_texts.py --datasets imdb --training windows
    python benchmarks/long_texts.py --quick      # 1,000 sampled IMDB rows of each split, 32 tokens, one epoch

One JSON line per dataset is appended to `--results`; a rerun skips the datasets there.
"""

import argparse
import datetime
import json
import os
import pathlib
import sys
import tempfile
import time

import accuracy
import numpy as np

QUICK = {"datasets": ["imdb"], "length": 32, "rows": 1000, "epochs": 1}  # rows: of each split, sampled
WAYS = ("cut", "windows_mean", "windows_log_mean")
TRAINED_ON = {"start": "each text's start", "windows": "a random window an epoch"}


def carve(texts, labels, seed):
    """`(kept, held out)`, each `(texts, labels)`: a seeded tenth held out."""
    order = np.random.default_rng(seed).permutation(len(texts))
    held = set(order[: len(texts) // 10].tolist())
    split = [([], []), ([], [])]
    for i, (text, label) in enumerate(zip(texts, labels)):
        split[i in held][0].append(text)
        split[i in held][1].append(label)
    return split


def sampled(texts, labels, rows, seed):
    """`rows` of `(texts, labels)` drawn with `seed` (a file sorted by label keeps every label), or all."""
    if not rows:
        return texts, labels
    chosen = sorted(np.random.default_rng(seed).permutation(len(texts))[:rows].tolist())
    return [texts[i] for i in chosen], [labels[i] for i in chosen]


def scores_by_way(run, texts, labels):
    """Held-out accuracy of each of `WAYS` for the run folder `run`, and how many texts it cuts."""
    from keras_textattn.inference import Classifier
    from keras_textattn.run_folder import load_run

    _, encoder, names = load_run(run)
    truth = np.array([names.index(str(label)) for label in labels])
    cut = Classifier(run).probabilities(texts)
    windows, owners = encoder.windows(texts)
    each = Classifier(run).probabilities(windows)  # every window fits: cut reads it whole
    counts = np.bincount(owners, minlength=len(texts))[:, None]
    mean = np.zeros_like(cut)
    np.add.at(mean, owners, each)
    log_mean = np.zeros_like(cut)
    np.add.at(log_mean, owners, np.log(np.maximum(each, 1e-12)))
    mean, log_mean = mean / counts, log_mean / counts
    library = Classifier(run, long_texts="windows").probabilities(texts)
    np.testing.assert_allclose(library, mean, atol=1e-5)  # what the benchmark scores is what predict does
    answers = {"cut": cut, "windows_mean": mean, "windows_log_mean": log_mean}
    return {way: float(np.mean(answers[way].argmax(-1) == truth)) for way in WAYS}, int(np.sum(counts > 1))


def timed_accuracy(run, texts, labels, long_texts):
    """`(accuracy, CPU seconds per text)` of `Classifier(run, long_texts=...)` on `texts`."""
    from keras_textattn.inference import Classifier
    from keras_textattn.run_folder import load_run

    names = load_run(run)[2]
    classifier = Classifier(run, long_texts=long_texts)
    classifier.probabilities(texts[:64])  # tracing, not reading
    start = time.process_time()
    predicted = classifier.probabilities(texts).argmax(-1)
    seconds = time.process_time() - start
    truth = np.array([names.index(str(label)) for label in labels])
    return float(np.mean(predicted == truth)), seconds / len(texts)


def measure(data_dir, dataset, model, length, seed, rows=None, epochs=None, training="start"):
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets.formats import read_labelled_texts
    from keras_textattn.training import train

    files = accuracy.files(data_dir, dataset)
    texts, labels = sampled(*read_labelled_texts(files["train"])[:2], rows, seed)
    (kept_texts, kept_labels), (held_texts, held_labels) = carve(texts, labels, seed)
    test_texts, test_labels = sampled(*read_labelled_texts(files["test"])[:2], rows, seed)
    with tempfile.TemporaryDirectory() as folder:
        path, run = os.path.join(folder, "train.csv"), os.path.join(folder, "run")
        accuracy.write_labelled_csv(path, kept_texts, kept_labels)
        options = {"epochs": epochs} if epochs else {}
        options["sample_windows"] = training == "windows"
        train(model, {"train": LocalFile(path)}, run, sequence_length=length, seed=seed, verbose=0, **options)
        held_out, held_longer = scores_by_way(run, held_texts, held_labels)
        chosen = max(WAYS, key=lambda way: held_out[way])  # a tie keeps the first: cut, then the mean
        test = {way: timed_accuracy(run, test_texts, test_labels, way) for way in ("cut", "windows")}
    return {
        "dataset": dataset,
        "model": model,
        "length": length,
        "training": training,
        "seed": seed,
        "held_out_rows": len(held_texts),
        "held_out_longer": held_longer,
        "held_out_accuracy": held_out,
        "chosen": chosen,
        "test_rows": len(test_texts),
        "test_accuracy": {way: figure for way, (figure, _) in test.items()},
        "cpu_seconds_per_text": {way: seconds for way, (_, seconds) in test.items()},
        "date": datetime.date.today().isoformat(),
    }


def report(rows):
    lines = [
        "| dataset | model, length, seed | trained on | held out: cut / windows mean / windows log-mean (longer texts) "
        "| chosen | test: cut / windows | CPU ms a text: cut / windows |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = sorted(rows, key=lambda r: (r["dataset"], r["length"], r.get("training", "start"), r["seed"]))
    for r in order:
        held = " / ".join(f"{r['held_out_accuracy'][way]:.4f}" for way in WAYS)
        trained_on = TRAINED_ON[r.get("training", "start")]
        lines.append(
            f"| {r['dataset']} | {r['model']}, {r['length']}, seed {r['seed']} | {trained_on} | {held} "
            f"({r['held_out_longer']:,} of {r['held_out_rows']:,}) | {r['chosen']} | "
            f"{r['test_accuracy']['cut']:.4f} / {r['test_accuracy']['windows']:.4f} | "
            f"{r['cpu_seconds_per_text']['cut'] * 1000:.2f} / {r['cpu_seconds_per_text']['windows'] * 1000:.2f} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", accuracy.DEFAULT_DATA)),
    )
    parser.add_argument("--results", default="benchmarks/results/long_texts.jsonl", help="JSON lines, appended")
    parser.add_argument("--datasets", nargs="+", choices=list(accuracy.DATASETS), default=["imdb", "r8"])
    parser.add_argument("--model", choices=accuracy.PAPER_MODELS, default="scalable_attention")
    parser.add_argument("--length", type=int, default=256, help="the tokens the model reads")
    parser.add_argument("--seed", type=accuracy.seed_number, default=0)
    parser.add_argument(
        "--training", choices=list(TRAINED_ON), default="start", help="what of a long text training reads"
    )
    parser.add_argument("--quick", action="store_true", help=f"smoke check: {QUICK}")
    args = parser.parse_args(argv)
    if not (args.data_dir / "README.md").is_file():
        parser.error(f"no datasets at {args.data_dir}; pass --data-dir or set KERAS_TEXTATTN_DATA")
    rows, epochs = None, None
    if args.quick:
        args.datasets, args.length, rows, epochs = QUICK["datasets"], QUICK["length"], QUICK["rows"], QUICK["epochs"]
    results = accuracy.read_results(args.results)
    done = {(r["dataset"], r["model"], r["length"], r.get("training", "start"), r["seed"]) for r in results}
    for dataset in args.datasets:
        if (dataset, args.model, args.length, args.training, args.seed) in done:
            continue
        results.append(measure(args.data_dir, dataset, args.model, args.length, args.seed, rows, epochs, args.training))
        os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
        with open(args.results, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(results[-1]) + "\n")
        print(json.dumps(results[-1]), flush=True)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
