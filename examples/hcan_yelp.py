r"""HCAN on Yelp polarity (hcan_hierarchical_conv_attention.txt, sections 3-4).

    python examples/hcan_yelp.py                      # TFDS yelp_polarity_reviews (downloads)
    python examples/hcan_yelp.py --small --data reviews.csv --test-data reviews_test.csv
    # offline, with the IMDB reviews in ../shared/data as a stand-in for Yelp:
    python examples/hcan_yelp.py --small \
        --data ../shared/data/imdb/train.csv.gz --test-data ../shared/data/imdb/test.csv.gz
"""

from _example import parse_args
from _example import run

if __name__ == "__main__":
    args = parse_args(__doc__, "runs/hcan-yelp")
    run(
        args,
        "hcan",
        {},  # paper: size 512, 8 heads, word2vec embeddings
        args.data or "yelp_polarity_reviews",
        epochs=3,
        test_data=args.test_data,
        max_sentences=15 if args.small else 30,
        sequence_length=30 if args.small else 50,
        min_frequency=5,  # section 4: word2vec's minimum word frequency of 5; rarer words left out
    )
