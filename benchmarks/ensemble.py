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
"""

import argparse
import os
import pathlib
import sys
import tempfile

import numpy as np

import accuracy
import paired


def ensemble_rows(probabilities, labels, linear):
    """One dict per seed: the members' accuracies, the ensemble's, and its paired comparison with
    TF-IDF + LR (`linear`: which test rows it got right). `probabilities`: {seed: [array per member]}."""
    rows = []
    for seed, members in sorted(probabilities.items()):
        right = np.mean(members, axis=0).argmax(-1) == labels
        only_ours, only_linear, p = paired.compare(right, linear)
        rows.append({"seed": seed, "members": [float(np.mean(m.argmax(-1) == labels)) for m in members],
                     "accuracy": float(right.mean()), "only_ours": only_ours, "only_linear": only_linear, "p": p})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", accuracy.DEFAULT_DATA)))
    parser.add_argument("--dataset", choices=list(accuracy.DATASETS), default="imdb")
    parser.add_argument("--probabilities", help="the folder of accuracy.py --save-probabilities")
    parser.add_argument("--members", nargs="+", help="row names of accuracy.py, as its results file names them")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--quick", action="store_true",
                        help="smoke check: TREC, scalable_attention and kim_cnn, one epoch, seed 0")
    args = parser.parse_args(argv)
    if not (args.data_dir / "README.md").is_file():
        parser.error(f"no datasets at {args.data_dir}; pass --data-dir or set KERAS_TEXTATTN_DATA")
    with tempfile.TemporaryDirectory() as scratch:
        if args.quick:
            args.dataset, args.seeds, args.probabilities = "trec", [0], scratch
            args.members = ["scalable_attention@e1", "kim_cnn@e1"]
            accuracy.main(["--data-dir", str(args.data_dir), "--datasets", "trec", "--models", "scalable_attention",
                           "kim_cnn", "--seeds", "0", "--epochs", "1", "--results", os.path.join(scratch, "rows.jsonl"),
                           "--save-probabilities", scratch])
        if not args.probabilities or not args.members or len(args.members) < 2:
            parser.error("give --probabilities FOLDER and at least two --members")
        paths = {(seed, row): accuracy.probabilities_file(args.probabilities, args.dataset, row, seed)
                 for seed in args.seeds for row in args.members}
        missing = [path for path in paths.values() if not os.path.isfile(path)]
        if missing:
            parser.error(f"no saved probabilities at {', '.join(missing)}: run accuracy.py with --save-probabilities")
        probabilities = {seed: [np.load(paths[seed, row]) for row in args.members] for seed in args.seeds}
    _, labels, linear = paired.tfidf_right(accuracy.load(args.data_dir, args.dataset))
    print(f"{args.dataset}: TF-IDF + LR {linear.mean():.4f} on {len(labels):,} test rows; "
          f"the ensemble averages {' + '.join(args.members)}")
    rows = ensemble_rows(probabilities, labels, linear)
    for row in rows:
        print(f"seed {row['seed']}: members {' / '.join(f'{a:.4f}' for a in row['members'])}, ensemble "
              f"{row['accuracy']:.4f} ({row['accuracy'] - linear.mean():+.4f}); right where TF-IDF + LR is wrong: "
              f"{row['only_ours']}, the other way: {row['only_linear']}; McNemar exact p = {row['p']:.3f}")
    figures = [row["accuracy"] for row in rows]
    print(f"ensemble {np.mean(figures):.4f} ± {np.std(figures):.4f} over {len(rows)} seeds; TF-IDF + LR {linear.mean():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
