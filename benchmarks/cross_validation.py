"""Choose between training recipes by k-fold cross-validation of the training split, as the LAMA
paper chose its models ("the best model on the test set after performing 3-fold cross-validation",
section 5), instead of by the one tenth that `train()` holds out.

A held-out tenth of a small training split is a noisy judge: on R8 it is 525-593 documents, whose
accuracy carries about 0.8 points of sampling error, more than most differences between recipes.
Here each of accuracy.py's `train()` rows (TRAINED) trains k times, each time on k - 1 folds of the
training split with the remaining fold as its validation data (which `train()`'s early stopping
and schedules read, as they read the tenth), so every training row is scored once. The folds are
stratified by label and the same for every row and seed (scikit-learn's `StratifiedKFold`,
shuffled with FOLD_SEED); the test split is never read.

    python benchmarks/cross_validation.py --dataset r8 --models lama+paper_adam_min5_cosine \\
        lama+paper_adam_min5_cosine_e3 lama+paper_adam_min5_cosine_bigrams --folds 3 --seeds 0
    python benchmarks/cross_validation.py --report     # the table of benchmarks/results/cross_validation.jsonl
    python benchmarks/cross_validation.py --quick      # TREC, scalable_attention+defaults and tfidf_lr, 2 folds

One JSON line per dataset, row, seed and fold is appended to the results file as it finishes; a
rerun skips what is there. The report pools each row's folds: the share of all training rows its
fold models got right, and the spread of that share over the seeds. `tfidf_lr` (accuracy.py's TF-IDF +
LR, deterministic) on the same folds is the baseline to compare rows with without reading the test split;
`tfidf_lr_cv` and `nbsvm` are accuracy.py's other linear baselines.

MR has no test split: its literature reports 10-fold cross-validation of all its rows (NB-SVM 0.794),
and so does this script for it (`WHOLE`):

    python benchmarks/cross_validation.py --dataset mr --folds 10 --models nbsvm tfidf_lr auto+defaults
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import accuracy
import numpy as np

FOLD_SEED = 0
# The datasets with no test split, cross-validated whole as their literature does: file options, length.
WHOLE = {"mr": ({"path": "mr/all.csv.gz"}, 56)}
LENGTHS = {**{name: options[2] for name, options in accuracy.DATASETS.items()}, **{n: w[1] for n, w in WHOLE.items()}}
# The linear baselines, each `(train, test, seed)` -> its result (accuracy.py's), on the same folds.
LINEAR = {"tfidf_lr": accuracy.tfidf_on, "tfidf_lr_cv": accuracy.tfidf_cv_on, "nbsvm": accuracy.nbsvm_on}
QUICK = {"dataset": "trec", "models": ["scalable_attention+defaults", "tfidf_lr"], "folds": 2, "seeds": [0]}


def fold_of_each_row(labels, folds, seed):
    """Each row's fold (0 .. folds - 1): stratified by label, shuffled with `seed`."""
    from sklearn.model_selection import StratifiedKFold

    fold = np.empty(len(labels), int)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for k, (_, held_out) in enumerate(splitter.split(np.zeros(len(labels)), labels)):
        fold[held_out] = k
    return fold


def training_rows(data_dir, dataset_name):
    """`(texts, labels)` of a dataset's training split (of `WHOLE`'s: all its rows) as `train()`
    reads them, as object arrays."""
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets.formats import read_labelled_texts

    if dataset_name in WHOLE:
        options = WHOLE[dataset_name][0]
        source = LocalFile(**{**options, "path": str(data_dir / options["path"])})
    else:
        source = accuracy.files(data_dir, dataset_name)["train"]
    texts, labels, _, _ = read_labelled_texts(source)
    return np.array(texts, dtype=object), np.array(labels, dtype=object)


def run_fold(data_dir, dataset_name, row, seed, texts, labels, held_out, max_tokens):
    """Validation accuracy (and rows, epochs, seconds) of `row` trained on the rows outside `held_out`."""
    if row in LINEAR:
        train = (list(texts[~held_out]), labels[~held_out])
        result = LINEAR[row](train, (list(texts[held_out]), labels[held_out]), seed)
        return {
            "validation_accuracy": result["accuracy"],
            "validation_rows": int(held_out.sum()),
            "best_epoch": None,
            "epochs_trained": None,
            "train_seconds": result["train_seconds"],
        }
    from keras_textattn.datasets import LocalFile

    arguments, _ = accuracy.trained_row(data_dir, row, dataset_name, seed)
    # A race (`--model auto`) chooses its model on held-out rows: they must not be the fold it is
    # scored on. It holds out its own tenth of the fold's training rows, as a user's run does, and
    # the fold is its test split.
    scored = "test" if arguments["model_name"] == "auto" else "validation"
    with tempfile.TemporaryDirectory() as folder:
        paths = {split: os.path.join(folder, f"{split}.csv") for split in ("train", scored)}
        accuracy.write_labelled_csv(paths["train"], texts[~held_out], labels[~held_out])
        accuracy.write_labelled_csv(paths[scored], texts[held_out], labels[held_out])
        result = accuracy.run_train(
            data_files={split: LocalFile(path) for split, path in paths.items()},
            length=LENGTHS[dataset_name],
            seed=seed,
            max_tokens=max_tokens,
            **arguments,
        )
    return {
        "validation_accuracy": result["accuracy" if scored == "test" else "validation_accuracy"],
        "validation_rows": int(held_out.sum()),
        "best_epoch": result["best_epoch"],
        "epochs_trained": result["epochs_trained"],
        "train_seconds": result["train_seconds"],
        **{key: result[key] for key in ("chosen_model", "held_out_by_candidate") if key in result},
    }


def report(results):
    """Markdown: per dataset and row, the pooled cross-validation accuracy (mean ± sd over seeds); a
    fold measured again (a row re-run after a change, appended to the results) counts by its last result."""
    lines = [
        "| dataset | row | folds | cross-validated accuracy (mean ± sd over seeds) | by seed | seeds | seconds a "
        "fold |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: |",
    ]
    groups = {}
    for r in results:
        groups.setdefault((r["dataset"], r["model"], r["folds"]), {}).setdefault(r["seed"], {})[r["fold"]] = r
    for (dataset, model, folds), by_seed in sorted(groups.items()):
        complete = {seed: list(runs.values()) for seed, runs in by_seed.items() if len(runs) == folds}
        if not complete:
            continue
        pooled = [
            sum(r["validation_accuracy"] * r["validation_rows"] for r in runs) / sum(r["validation_rows"] for r in runs)
            for _, runs in sorted(complete.items())
        ]
        seconds = np.mean([r["train_seconds"] for runs in complete.values() for r in runs])
        lines.append(
            f"| {dataset} | {model} | {folds} | {np.mean(pooled):.4f} ± {np.std(pooled):.4f} | "
            f"{' / '.join(f'{p:.4f}' for p in pooled)} | {len(pooled)} | {seconds:.0f} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", accuracy.DEFAULT_DATA)),
    )
    parser.add_argument("--results", default="benchmarks/results/cross_validation.jsonl", help="JSON lines, appended")
    parser.add_argument("--dataset", choices=list(LENGTHS), default="r8")
    parser.add_argument(
        "--models",
        nargs="+",
        choices=[*accuracy.TRAINED, *LINEAR],
        default=["lama+paper_adam_min5_cosine"],
        help=f"rows of accuracy.py run through train(), or the linear baselines on the same folds: {', '.join(LINEAR)}",
    )
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seeds", nargs="+", type=accuracy.seed_number, default=[0])
    parser.add_argument("--max-tokens", type=int, default=accuracy.VOCABULARY, help="as accuracy.py's")
    parser.add_argument("--report", action="store_true", help="print the table of the results file and stop")
    parser.add_argument("--quick", action="store_true", help=f"smoke check: {QUICK}")
    args = parser.parse_args(argv)
    if args.quick:
        args.dataset, args.models, args.folds, args.seeds = (
            QUICK["dataset"],
            QUICK["models"],
            QUICK["folds"],
            QUICK["seeds"],
        )
    if args.folds < 2:
        parser.error(f"--folds must be at least 2; got {args.folds}")
    results = accuracy.read_results(args.results)
    if args.report:
        print(report(results))
        return 0
    if not (args.data_dir / "README.md").is_file():
        parser.error(f"no datasets at {args.data_dir}; pass --data-dir or set KERAS_TEXTATTN_DATA")
    texts, labels = training_rows(args.data_dir, args.dataset)
    fold = fold_of_each_row(labels, args.folds, FOLD_SEED)
    os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
    done = {(r["dataset"], r["model"], r["folds"], r["seed"], r["fold"]) for r in results}
    for row in args.models:
        for seed in args.seeds:
            for k in range(args.folds):
                key = (args.dataset, row, args.folds, seed, k)
                if key in done:
                    continue
                start = time.perf_counter()
                result = run_fold(args.data_dir, args.dataset, row, seed, texts, labels, fold == k, args.max_tokens)
                results.append(dict(zip(("dataset", "model", "folds", "seed", "fold"), key), **result))
                with open(args.results, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(results[-1]) + "\n")
                print(
                    f"{args.dataset} {row} seed {seed} fold {k + 1}/{args.folds}: validation accuracy "
                    f"{result['validation_accuracy']:.4f} on {result['validation_rows']:,} rows, "
                    f"{time.perf_counter() - start:.0f} s",
                    flush=True,
                )
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
