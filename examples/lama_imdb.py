r"""LAMA+ctx on IMDB (lama_low_rank_multihead_attention.md, sections 3.5 and 4).

    python examples/lama_imdb.py                      # TFDS imdb_reviews (downloads)
    python examples/lama_imdb.py --small \
        --data ../shared/data/imdb/train.csv.gz --test-data ../shared/data/imdb/test.csv.gz
"""

from _example import parse_args
from _example import run

if __name__ == "__main__":
    args = parse_args(__doc__, "runs/lama-imdb")
    data = args.data or "imdb_reviews"
    run(
        args,
        "lama",
        # LAMA+ctx: the context is the mean embedding (paper: embedding 100, BiGRU 50, MLP 512,
        # dropout 0.4, m = 15; word2vec embeddings, early stopping with patience 5, SGD at 0.05).
        {"use_context": True},
        data,
        epochs=5,
        test_data=args.test_data,
        sequence_length=400,
        min_frequency=5,  # "All words appearing less than 5 times are discarded"
    )
