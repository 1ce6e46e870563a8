r"""How far a held-out tenth of IMDB's training file overstates test accuracy, carved two ways.

IMDB's test reviews are of other films than its training reviews (Maas et al., 2011), and
within each label of the training file the ids run film by film: this script measures that
first (the TF-IDF cosine of reviews with consecutive ids against random pairs). A random 10%
of the training rows ("random", what `train()` holds out) therefore shares films with the
other 90%; a contiguous tenth of each label's ids ("id_block") keeps most films on one side,
as the test split does. For each carve, train on the other 90% and measure the held-out and
the test accuracy (the official 25,000 test reviews, read once per run):

    python benchmarks/validation_split.py                                   # TF-IDF + LR, scalable attention
    python benchmarks/validation_split.py --models tfidf_lr --carves 0 1 2 3 4 5 6 7 8 9
    python benchmarks/validation_split.py --models scalable_attention --max-tokens 5000   # rows "...@v5000"
    python benchmarks/validation_split.py --models scalable_attention --max-tokens 2000 --length 768 --epochs 6 \
        --kinds id_block
    python benchmarks/validation_split.py --models hcan --max-tokens 2000 --bigram-buckets 200000 --epochs 2 \
        --lr-schedule cosine --adversarial 0.05 --max-sentences 48 --kinds id_block --carves 0 --hide-test
    python benchmarks/validation_split.py --quick      # TF-IDF, one carve of each kind, 2,000 reviews per label
    python benchmarks/validation_split.py --report --hide-test   # the table without its test columns

When the carves choose a recipe, run and report with `--hide-test`: the held-out figures are
printed and the test figures only recorded, so the choice is made before they are seen.

Keras models train through `train()` with `validation_data` set to the carve (the cpu preset,
3 epochs at a constant rate, texts cut at 256 tokens as in accuracy.py, HCAN's sentences and words
chosen by train(); `--length`, `--max-sentences`, `--epochs`,
`--bigram-buckets`, `--lr-schedule`, `--embeddings`, `--vectors-vocabulary` and others change
that and name the row, e.g. "scalable_attention@768@v2000@e6"; each row keeps the held-out
accuracy after every epoch). Results are appended to benchmarks/results/validation_split.jsonl;
a rerun skips what is there. Rows "...@epoch_cosine" are of the cosine schedule as it was until
2026-11-24, the rate set once an epoch (it is now lowered before every batch).
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
from accuracy import DATASETS
from accuracy import DEFAULT_DATA
from accuracy import VOCABULARY
from accuracy import builder_arguments
from accuracy import reads_sentences
from accuracy import row_suffix
from accuracy import tfidf_classifier
from accuracy import write_labelled_csv

CARVES = ("random", "id_block")
BLOCKS = 10  # id_block k holds out ids [k * n / 10, (k + 1) * n / 10) of each label
QUICK = {"models": ["tfidf_lr"], "carves": [0], "per_label": 2000}


def read_imdb(path, per_label=None):
    """Arrays text, label (0 neg, 1 pos) and id of an IMDB split file, in file order (sorted by
    label, then id); `per_label`: only each label's first reviews."""
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets.formats import read_labelled_texts

    texts, labels, _, ids = read_labelled_texts(LocalFile(str(path), group_column="id"))
    texts, labels, ids = np.array(texts, dtype=object), (np.array(labels) == "pos").astype(int), np.array(ids, int)
    kept = ids < per_label if per_label else slice(None)
    return texts[kept], labels[kept], ids[kept]


def neighbour_similarity(texts, labels, ids, seed=0):
    """Mean TF-IDF cosine of reviews with consecutive ids (same label) and of random pairs."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    similarity = {"consecutive": [], "random": []}
    for label in (0, 1):
        order = np.flatnonzero(labels == label)[np.argsort(ids[labels == label])]
        vectors = TfidfVectorizer(min_df=2, stop_words="english").fit_transform(texts[order])
        shuffled = np.random.default_rng(seed).permutation(len(order))
        for name, index in (("consecutive", np.arange(len(order))), ("random", shuffled)):
            pairs = vectors[index[:-1]].multiply(vectors[index[1:]]).sum(axis=1)
            similarity[name].append(float(np.mean(pairs)))
    return {name: float(np.mean(values)) for name, values in similarity.items()}


def held_out(carve, k, labels, ids, blocks=BLOCKS):
    """Boolean mask of the rows carve `k` holds out: 1 / `blocks` (a tenth) of each label."""
    mask = np.zeros(len(labels), bool)
    for label in (0, 1):
        rows = np.flatnonzero(labels == label)
        if carve == "random":
            mask[np.random.default_rng(k).permutation(rows)[: len(rows) // blocks]] = True
        else:
            rank = np.argsort(np.argsort(ids[rows]))
            mask[rows[rank * blocks // len(rows) == k]] = True
    return mask


def run(
    model,
    train_texts,
    train_labels,
    mask,
    test_texts,
    test_labels,
    test_path,
    seed,
    max_tokens,
    length=DATASETS["imdb"][2],
    epochs=3,
    bigram_buckets=None,
    bigrams_of=None,
    weight_decay=None,
    lr_schedule=None,
    embeddings=None,
    vectors_vocabulary=None,
    adversarial=None,
    max_sentences=None,
):
    """Held-out and test accuracy of `model` trained on the rows outside `mask`. `length`: tokens
    per text (HCAN: words per sentence; None: train()'s choice from the training texts, as
    `max_sentences` None is)."""
    start = time.perf_counter()
    if model == "tfidf_lr":
        classifier = tfidf_classifier(train_texts[~mask], train_labels[~mask], seed)
        accuracy = {
            "validation": classifier.score(train_texts[mask], train_labels[mask]),
            "test": classifier.score(test_texts, test_labels),
        }
        return {**accuracy, "seconds": time.perf_counter() - start}
    from keras_textattn.training import train

    spec, options = builder_arguments(model)
    with tempfile.TemporaryDirectory() as folder:
        files = {name: os.path.join(folder, f"{name}.csv") for name in ("train", "validation")}
        for split, rows in (("train", ~mask), ("validation", mask)):
            write_labelled_csv(files[split], train_texts[rows], np.where(train_labels[rows] == 1, "pos", "neg"))
        metrics = train(
            spec,
            files["train"],
            os.path.join(folder, "run"),
            validation_data=files["validation"],
            test_data=test_path,
            model_kwargs=options,
            max_tokens=max_tokens,
            sequence_length=length,
            max_sentences=max_sentences,
            epochs=epochs,
            bigram_buckets=bigram_buckets,
            bigrams_of=bigrams_of,
            weight_decay=weight_decay,
            lr_schedule=lr_schedule,
            embeddings=embeddings,
            vectors_vocabulary=vectors_vocabulary,
            adversarial=adversarial,
            seed=seed,
            verbose=0,
        )
    return {
        "validation": metrics["accuracy"]["validation"],
        "test": metrics["accuracy"]["test"],
        "validation_by_epoch": metrics["history"].get("val_accuracy"),
        "seconds": time.perf_counter() - start,
    }


def report(rows, hide_test=False):
    """The table of `rows`; `hide_test` leaves out the test columns (they stay in the results file)."""
    if hide_test:
        lines = [
            "| model | carve | held-out accuracy | runs | held-out by epoch |",
            "| --- | --- | ---: | ---: | --- |",
        ]
    else:
        lines = [
            "| model | carve | held-out accuracy | test accuracy | held-out minus test | runs | held-out by epoch |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- |",
        ]

    def order(
        model,
    ):  # by vocabulary within a name: "scalable_attention@768@v5000@e6" -> ("scalable_attention@768", 5000, "e6")
        name, _, rest = model.removesuffix("@quick").partition("@v")
        size, _, more = rest.partition("@")
        return name, int(size or VOCABULARY), more

    for model in sorted({row["model"] for row in rows if "model" in row}, key=order):
        for carve in CARVES:
            runs = [row for row in rows if row.get("model") == model and row["carve"] == carve]
            if runs:
                validation, test = (np.array([row[key] for row in runs]) for key in ("validation", "test"))
                by_epoch = [row.get("validation_by_epoch") for row in runs]
                by_epoch = (
                    " / ".join(f"{a:.3f}" for a in np.mean(by_epoch, axis=0))
                    if all(by_epoch) and len({len(e) for e in by_epoch}) == 1
                    else ""
                )
                test_columns = (
                    "" if hide_test else f"{test.mean():.3f} ± {test.std():.3f} | {(validation - test).mean():+.3f} | "
                )
                lines.append(
                    f"| {model} | {carve} | {validation.mean():.3f} ± {validation.std():.3f} | {test_columns}"
                    f"{len(runs)} | {by_epoch} |"
                )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir", type=pathlib.Path, default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", DEFAULT_DATA))
    )
    parser.add_argument("--results", default="benchmarks/results/validation_split.jsonl", help="JSON lines, appended")
    parser.add_argument(
        "--models",
        nargs="+",
        default=["tfidf_lr", "scalable_attention"],
        help="tfidf_lr, names of keras_textattn.models.SPECS or accuracy.py's variants (dual_axial_mean)",
    )
    parser.add_argument(
        "--carves",
        nargs="+",
        type=int,
        default=[0, 4, 8],
        choices=range(BLOCKS),
        help="which carves of each kind: the random seed, and the id tenth",
    )
    parser.add_argument("--kinds", nargs="+", choices=CARVES, default=list(CARVES), help="which kinds of carve")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=VOCABULARY,
        help=f"Keras models: the vocabulary (rows other than {VOCABULARY} are named '<model>@v<tokens>')",
    )
    parser.add_argument(
        "--length",
        type=int,
        help=f"Keras models: tokens per review (default {DATASETS['imdb'][2]}; HCAN: words per sentence, "
        "default: train()'s choice from the training texts)",
    )
    (
        parser.add_argument(
            "--max-sentences",
            type=int,
            metavar="N",
            help="HCAN: sentences per review (row '@s<N>'; default: train()'s choice, at most 30)",
        ),
    )
    parser.add_argument("--epochs", type=int, default=3, help="Keras models: epochs")
    parser.add_argument("--bigram-buckets", type=int, help="Keras models: hashed bigrams (default: the model's)")
    parser.add_argument(
        "--bigrams-of",
        choices=["vocabulary", "tokens"],
        help="Keras models with bigrams: what they pair (default: the vocabulary's tokens; 'tokens': "
        "as written, rows '@tokens')",
    )
    parser.add_argument("--weight-decay", type=float, help="Keras models: decoupled weight decay (row '@wd<x>')")
    parser.add_argument(
        "--lr-schedule",
        default="constant",
        help="Keras models: train()'s learning-rate schedule (rows other than constant are named "
        "'@<schedule>'; constant also for scalable attention, whose train() default is cosine)",
    )
    parser.add_argument(
        "--embeddings",
        help="Keras models: train()'s initial word vectors (row '@<embeddings>'), e.g. "
        "glove-6b-50d with a model of that embedding size: scalable_attention_d50",
    )
    parser.add_argument(
        "--vectors-vocabulary",
        type=int,
        metavar="N",
        help="Keras models with --embeddings: train()'s words of the vectors added to the vocabulary (row '@add<N>')",
    )
    parser.add_argument(
        "--adversarial",
        type=float,
        metavar="EPSILON",
        help="Keras models: train()'s adversarial training (row '@adv<EPSILON>')",
    )
    parser.add_argument("--report", action="store_true", help="print the table of the results file and stop")
    parser.add_argument(
        "--hide-test",
        action="store_true",
        help="print held-out figures only, to choose on them without seeing test accuracy first "
        "(still recorded in the results file)",
    )
    parser.add_argument("--quick", action="store_true", help=f"smoke check: {QUICK}")
    args = parser.parse_args(argv)
    per_label = None
    if args.quick:
        args.models, args.carves, per_label = QUICK["models"], QUICK["carves"], QUICK["per_label"]
    rows = []
    if os.path.exists(args.results):
        with open(args.results, encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
    if args.report:
        print(report(rows, args.hide_test))
        return 0
    if not (args.data_dir / "imdb" / "train.csv.gz").is_file():
        parser.error(f"no IMDB at {args.data_dir / 'imdb'}; pass --data-dir or set KERAS_TEXTATTN_DATA")
    texts, labels, ids = read_imdb(args.data_dir / "imdb" / "train.csv.gz", per_label)
    test_path = str(args.data_dir / "imdb" / "test.csv.gz")
    test_texts, test_labels, _ = read_imdb(test_path, per_label)
    os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
    if not any("similarity" in row for row in rows):
        similarity = neighbour_similarity(texts, labels, ids)
        print(
            f"TF-IDF cosine of consecutive ids {similarity['consecutive']:.3f}, of random pairs "
            f"{similarity['random']:.3f}"
        )
        rows.append({"similarity": similarity})
        with open(args.results, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(rows[-1]) + "\n")
    done = {(row["model"], row["carve"], row["k"]) for row in rows if "model" in row}
    for model in args.models:
        row_name = model
        length = args.length
        if model != "tfidf_lr":
            length = length or (None if reads_sentences(model) else DATASETS["imdb"][2])
            row_name += row_suffix(
                args.length if args.length != DATASETS["imdb"][2] else None, args.max_tokens, args.epochs
            )
            row_name += f"@b{args.bigram_buckets}" if args.bigram_buckets is not None else ""
            row_name += "@tokens" if args.bigrams_of == "tokens" else ""
            row_name += f"@wd{args.weight_decay:g}" if args.weight_decay is not None else ""
            row_name += f"@{args.lr_schedule}" if args.lr_schedule != "constant" else ""
            row_name += f"@{args.embeddings}" if args.embeddings else ""
            row_name += f"@add{args.vectors_vocabulary}" if args.vectors_vocabulary else ""
            row_name += f"@adv{args.adversarial:g}" if args.adversarial else ""
            row_name += f"@s{args.max_sentences}" if args.max_sentences else ""
        row_name += "@quick" if args.quick else ""  # of 2,000 reviews per label: never mixed with the full rows
        for carve in args.kinds:
            for k in args.carves:
                if (row_name, carve, k) in done:
                    continue
                result = run(
                    model,
                    texts,
                    labels,
                    held_out(carve, k, labels, ids),
                    test_texts,
                    test_labels,
                    test_path,
                    seed=k,
                    max_tokens=args.max_tokens,
                    length=length,
                    epochs=args.epochs,
                    bigram_buckets=args.bigram_buckets,
                    bigrams_of=args.bigrams_of,
                    weight_decay=args.weight_decay,
                    lr_schedule=args.lr_schedule,
                    embeddings=args.embeddings,
                    vectors_vocabulary=args.vectors_vocabulary,
                    adversarial=args.adversarial,
                    max_sentences=args.max_sentences,
                )
                rows.append({"model": row_name, "carve": carve, "k": k, **result})
                test = "" if args.hide_test else f"test {result['test']:.4f}, "
                print(
                    f"{row_name:20s} {carve:8s} {k}: held out {result['validation']:.4f}, "
                    f"{test}{result['seconds']:.0f} s",
                    flush=True,
                )
                with open(args.results, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(rows[-1]) + "\n")
    print(report(rows, args.hide_test))
    return 0


if __name__ == "__main__":
    sys.exit(main())
