"""Ensembles of accuracy.py's plain rows against TF-IDF + LR on the same test rows.

An ensemble here is the mean of its members' test probabilities (soft voting), as
`keras_textattn.inference.Classifier([run, run, ...])` and `predict` / `evaluate --run A --run B`
average runs. For each seed it reads the members' probabilities saved by `accuracy.py
--save-probabilities` (the same seed for every member), and prints each member's accuracy, the
ensemble's, and McNemar's exact test of the ensemble against TF-IDF + LR (paired.py's).

    python benchmarks/accuracy.py --datasets imdb --models hcan lama --length 768 --max-tokens 2000 --epochs 2 \\
        --bigram-buckets 200000 --lr-schedule cosine --results ensembles.jsonl --save-probabilities probabilities
    python benchmarks/ensemble.py --dataset imdb --probabilities probabilities \\
        --members hcan@768@v2000@e2@b200000@cosine lama@768@v2000@e2@b200000@cosine
    python benchmarks/ensemble.py --quick      # TREC: trains scalable_attention and kim_cnn for an epoch, then this

With `--folds K` it chooses an ensemble on held-out data instead, without reading the test split:
each of the `--members` (accuracy.py's plain models, trained as `run_keras` trains them, with
its `--length`, `--max-tokens`, `--epochs`, `--bigram-buckets` and `--lr-schedule`) trains K times
on K - 1 stratified folds of the training split (cross_validation.py's folds), so every training
row gets each member's probabilities from a model that did not train on it. It prints every
average of the members (each alone too), best first, beside TF-IDF + LR on the same folds:

    python benchmarks/ensemble.py --dataset ag_news --folds 5 --members scalable_attention dual_axial lama hcan \\
        --lr-schedule cosine
    python benchmarks/ensemble.py --quick --folds 2      # TREC, scalable_attention and kim_cnn, one epoch

On IMDB the folds are contiguous blocks of each label's review ids instead (validation_split.py's
id_block carves; `--folds 10` gives exactly those): its reviews come film by film and its test
films are new ones, so folds of random rows, sharing films, would overstate every model
(BENCHMARKS.md, "Validation on grouped data").
"""

import argparse
import dataclasses
import itertools
import os
import pathlib
import sys
import tempfile

import accuracy
import cross_validation
import numpy as np
import paired
import validation_split


def ensemble_rows(probabilities, labels, linear):
    """One dict per seed: the members' accuracies, the ensemble's, and its paired comparison with
    TF-IDF + LR (`linear`: which test rows it got right). `probabilities`: {seed: [array per member]}."""
    rows = []
    for seed, members in sorted(probabilities.items()):
        right = np.mean(members, axis=0).argmax(-1) == labels
        only_ours, only_linear, p = paired.compare(right, linear)
        rows.append(
            {
                "seed": seed,
                "members": [float(np.mean(m.argmax(-1) == labels)) for m in members],
                "accuracy": float(right.mean()),
                "only_ours": only_ours,
                "only_linear": only_linear,
                "p": p,
            }
        )
    return rows


def fold_of_each_row(data_dir, dataset_name, labels, folds):
    """Each training row's fold: cross_validation.py's stratified folds, or on IMDB blocks of
    each label's ids, which keep most films on one side (the module docstring)."""
    if dataset_name != "imdb":
        return cross_validation.fold_of_each_row(labels, folds, cross_validation.FOLD_SEED)
    _, imdb_labels, ids = validation_split.read_imdb(data_dir / accuracy.DATASETS["imdb"][0]["path"])
    if not np.array_equal(imdb_labels, labels):
        raise SystemExit("IMDB's training rows are not in the order validation_split.py reads them")
    fold = np.empty(len(labels), int)
    for k in range(folds):
        fold[validation_split.held_out("id_block", k, labels, ids, blocks=folds)] = k
    return fold


def held_out_probabilities(dataset, fold, members, seed, options):
    """`{member: probabilities}` over the training split of `dataset`: each row's probabilities
    from the member trained (`accuracy.run_keras`, with `options`) on the other folds (`fold`:
    each row's)."""
    probabilities = {member: np.zeros((len(fold), dataset.num_classes), "float32") for member in members}
    with tempfile.TemporaryDirectory() as scratch:
        for k in range(fold.max() + 1):
            held = fold == k
            split = dataclasses.replace(
                dataset,
                splits={
                    **dataset.splits,
                    "train": accuracy.kept_rows(dataset["train"], ~held),
                    "test": accuracy.kept_rows(dataset["train"], held),
                },
                rows={**dataset.rows, "train": int((~held).sum()), "test": int(held.sum())},
            )
            for member in members:
                path = os.path.join(scratch, "probabilities.npy")
                result = accuracy.run_keras(member, split, seed=seed, probabilities_path=path, **options)
                probabilities[member][held] = np.load(path)
                print(
                    f"seed {seed} fold {k + 1}/{fold.max() + 1} {member}: accuracy {result['accuracy']:.4f} on "
                    f"{int(held.sum())} rows",
                    flush=True,
                )
    return probabilities


def linear_held_out(texts, labels, fold):
    """TF-IDF + LR's accuracy over the training rows, each scored by the model fitted on the other folds."""
    texts, labels = np.array(texts, dtype=object), np.asarray(labels)
    right = 0.0
    for k in range(fold.max() + 1):
        held = fold == k
        fitted = cross_validation.LINEAR["tfidf_lr"](
            (list(texts[~held]), labels[~held]), (list(texts[held]), labels[held]), 0
        )
        right += fitted["accuracy"] * np.sum(held)
    return float(right / len(labels))


def averages_table(labels, probabilities):
    """Markdown: every average of the members (each alone too), best mean over seeds first.
    `probabilities`: {seed: {member: array}}."""
    members = list(next(iter(probabilities.values())))
    figures = {}
    for size in range(1, len(members) + 1):
        for chosen in itertools.combinations(members, size):
            figures[" + ".join(chosen)] = [
                float(np.mean(np.mean([by_member[m] for m in chosen], axis=0).argmax(-1) == labels))
                for _, by_member in sorted(probabilities.items())
            ]
    lines = [f"| averaged | mean ± sd | seeds {' / '.join(map(str, sorted(probabilities)))} |", "| --- | ---: | --- |"]
    lines += [
        f"| {name} | {np.mean(values):.4f} ± {np.std(values):.4f} | {' / '.join(f'{v:.4f}' for v in values)} |"
        for name, values in sorted(figures.items(), key=lambda item: -np.mean(item[1]))
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", accuracy.DEFAULT_DATA)),
    )
    parser.add_argument("--dataset", choices=list(accuracy.DATASETS), default="imdb")
    parser.add_argument("--probabilities", help="the folder of accuracy.py --save-probabilities")
    parser.add_argument(
        "--members",
        nargs="+",
        help="row names of accuracy.py, as its results file names them "
        "(with --folds: its plain models, e.g. scalable_attention)",
    )
    parser.add_argument("--seeds", nargs="+", type=accuracy.seed_number, default=[0, 1, 2])
    parser.add_argument("--folds", type=int, help="choose on held-out data: K folds of the training split (above)")
    parser.add_argument("--length", type=int, help="with --folds: as accuracy.py's (default: the dataset's)")
    parser.add_argument("--max-tokens", type=int, default=accuracy.VOCABULARY, help="with --folds: as accuracy.py's")
    parser.add_argument("--epochs", type=int, default=3, help="with --folds: as accuracy.py's")
    parser.add_argument("--bigram-buckets", type=int, help="with --folds: as accuracy.py's")
    parser.add_argument("--lr-schedule", help="with --folds: as accuracy.py's")
    parser.add_argument(
        "--quick", action="store_true", help="smoke check: TREC, scalable_attention and kim_cnn, one epoch, seed 0"
    )
    args = parser.parse_args(argv)
    if args.folds is not None:
        return choose_on_folds(parser, args)
    if not (args.data_dir / "README.md").is_file():
        parser.error(f"no datasets at {args.data_dir}; pass --data-dir or set KERAS_TEXTATTN_DATA")
    with tempfile.TemporaryDirectory() as scratch:
        if args.quick:
            args.dataset, args.seeds, args.probabilities = "trec", [0], scratch
            args.members = ["scalable_attention@e1", "kim_cnn@e1"]
            accuracy.main(
                [
                    "--data-dir",
                    str(args.data_dir),
                    "--datasets",
                    "trec",
                    "--models",
                    "scalable_attention",
                    "kim_cnn",
                    "--seeds",
                    "0",
                    "--epochs",
                    "1",
                    "--results",
                    os.path.join(scratch, "rows.jsonl"),
                    "--save-probabilities",
                    scratch,
                ]
            )
        if not args.probabilities or not args.members or len(args.members) < 2:
            parser.error("give --probabilities FOLDER and at least two --members")
        paths = {
            (seed, row): accuracy.probabilities_file(args.probabilities, args.dataset, row, seed)
            for seed in args.seeds
            for row in args.members
        }
        missing = [path for path in paths.values() if not os.path.isfile(path)]
        if missing:
            parser.error(f"no saved probabilities at {', '.join(missing)}: run accuracy.py with --save-probabilities")
        probabilities = {seed: [np.load(paths[seed, row]) for row in args.members] for seed in args.seeds}
    _, labels, linear = paired.tfidf_right(accuracy.load(args.data_dir, args.dataset))
    print(
        f"{args.dataset}: TF-IDF + LR {linear.mean():.4f} on {len(labels):,} test rows; "
        f"the ensemble averages {' + '.join(args.members)}"
    )
    rows = ensemble_rows(probabilities, labels, linear)
    for row in rows:
        print(
            f"seed {row['seed']}: members {' / '.join(f'{a:.4f}' for a in row['members'])}, ensemble "
            f"{row['accuracy']:.4f} ({row['accuracy'] - linear.mean():+.4f}); right where TF-IDF + LR is wrong: "
            f"{row['only_ours']}, the other way: {row['only_linear']}; McNemar exact p = {row['p']:.3f}"
        )
    figures = [row["accuracy"] for row in rows]
    print(
        f"ensemble {np.mean(figures):.4f} ± {np.std(figures):.4f} over {len(rows)} seeds; TF-IDF + LR "
        f"{linear.mean():.4f}"
    )
    return 0


def choose_on_folds(parser, args):
    if args.quick:
        args.dataset, args.members, args.seeds, args.epochs = "trec", ["scalable_attention", "kim_cnn"], [0], 1
    if args.folds < 2:
        parser.error(f"--folds must be at least 2; got {args.folds}")
    unknown = [m for m in args.members or [] if accuracy.builder_arguments(m)[0] not in accuracy.KERAS_MODELS]
    if not args.members or unknown:
        parser.error(
            f"--members: give accuracy.py's plain models ({', '.join(accuracy.KERAS_MODELS)}); got {unknown or 'none'}"
        )
    if not (args.data_dir / "README.md").is_file():
        parser.error(f"no datasets at {args.data_dir}; pass --data-dir or set KERAS_TEXTATTN_DATA")
    dataset = accuracy.load(args.data_dir, args.dataset)
    texts, labels = accuracy.texts_and_labels(dataset["train"])
    fold = fold_of_each_row(args.data_dir, args.dataset, labels, args.folds)
    options = {
        "length": args.length or accuracy.DATASETS[args.dataset][2],
        "epochs": args.epochs,
        "max_tokens": args.max_tokens,
        "bigram_buckets": args.bigram_buckets,
        "lr_schedule": args.lr_schedule,
    }
    probabilities = {seed: held_out_probabilities(dataset, fold, args.members, seed, options) for seed in args.seeds}
    print(
        f"{args.dataset}: held out, {args.folds} folds of the {len(labels):,} training rows; TF-IDF + LR "
        f"{linear_held_out(texts, labels, fold):.4f} on the same folds"
    )
    print(averages_table(labels, probabilities))
    return 0


if __name__ == "__main__":
    sys.exit(main())
