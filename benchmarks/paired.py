"""Is a gap between two models real? One of accuracy.py's `train()` rows against TF-IDF + LR on
the same test rows.

Accuracy on one test split carries a sampling error (SST-2's 1,821 sentences: about 0.9 points),
but two models scored on the same rows differ only where one gets a row right and the other
does not. For each seed this trains the row exactly as `benchmarks/accuracy.py` does, counts
those rows both ways, and gives McNemar's exact test (a two-sided binomial test on the
discordant rows): a small p says the difference would rarely arise by chance on this test set.

    python benchmarks/paired.py --dataset ag_news --model scalable_attention+defaults
    python benchmarks/paired.py --dataset sst2 --model scalable_attention+imdb_transfer
    python benchmarks/paired.py --dataset imdb --model hcan+defaults_bigrams_cosine_e2 --max-tokens 2000 --seeds 0
    python benchmarks/paired.py --quick              # TREC, scalable_attention+defaults, one seed
"""

import argparse
import os
import pathlib
import sys
import tempfile

import accuracy
import numpy as np


def compare(ours, theirs):
    """`(only ours right, only theirs right, McNemar's exact two-sided p)` for two boolean
    arrays of which test rows each model got right."""
    from scipy.stats import binomtest

    only_ours, only_theirs = int(np.sum(ours & ~theirs)), int(np.sum(~ours & theirs))
    discordant = only_ours + only_theirs
    p = binomtest(min(only_ours, only_theirs), discordant, 0.5).pvalue if discordant else 1.0
    return only_ours, only_theirs, float(p)


def tfidf_right(dataset):
    """`(test texts, test labels, which test rows TF-IDF + LR gets right)` of a dataset of
    accuracy.py's `load`."""
    train_texts, train_labels = accuracy.texts_and_labels(dataset["train"])
    test_texts, test_labels = accuracy.texts_and_labels(dataset["test"])
    return (
        test_texts,
        test_labels,
        accuracy.tfidf_classifier(train_texts, train_labels, 0).predict(test_texts) == test_labels,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", accuracy.DEFAULT_DATA)),
    )
    parser.add_argument("--dataset", choices=list(accuracy.DATASETS), default="ag_news")
    parser.add_argument(
        "--model",
        choices=list(accuracy.TRAINED),
        default="scalable_attention+defaults",
        help="a row of accuracy.py run through train()",
    )
    parser.add_argument("--seeds", nargs="+", type=accuracy.seed_number, default=[0, 1, 2])
    parser.add_argument("--max-tokens", type=int, default=accuracy.VOCABULARY, help="as accuracy.py's")
    parser.add_argument("--quick", action="store_true", help="smoke check: TREC, scalable_attention+defaults, seed 0")
    args = parser.parse_args(argv)
    if args.quick:
        args.dataset, args.model, args.seeds = "trec", "scalable_attention+defaults", [0]
    if not (args.data_dir / "README.md").is_file():
        parser.error(f"no datasets at {args.data_dir}; pass --data-dir or set KERAS_TEXTATTN_DATA")
    from keras_textattn.inference import Classifier

    test_texts, test_labels, linear = tfidf_right(accuracy.load(args.data_dir, args.dataset))
    print(f"{args.dataset}: TF-IDF + LR {linear.mean():.4f} on {len(test_labels):,} test rows", flush=True)
    for seed in args.seeds:
        row, _ = accuracy.trained_row(args.data_dir, args.model, args.dataset, seed)
        with tempfile.TemporaryDirectory() as folder:
            result = accuracy.run_train(
                data_files=accuracy.files(args.data_dir, args.dataset),
                length=accuracy.DATASETS[args.dataset][2],
                seed=seed,
                max_tokens=args.max_tokens,
                keep=folder,
                **row,
            )
            probabilities = Classifier(os.path.join(folder, "run")).probabilities(test_texts)
        ours = np.argmax(probabilities, axis=-1) == test_labels
        only_ours, only_linear, p = compare(ours, linear)
        print(
            f"seed {seed}: {args.model} {ours.mean():.4f} (its run: {result['accuracy']:.4f}), "
            f"{ours.mean() - linear.mean():+.4f}; right where TF-IDF + LR is wrong: {only_ours}, the other way: "
            f"{only_linear}; McNemar exact p = {p:.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
