r"""CSPAN (base) on AG News (cspan_cascaded_semantic_positional.md, section 3).

    python examples/cspan_ag_news.py                      # TFDS ag_news_subset (downloads)
    python examples/cspan_ag_news.py --small \
        --data ../shared/data/ag_news/train_sample_5k.csv.gz --test-data ../shared/data/ag_news/test.csv.gz
"""

from _ag_news import ag_news_source
from _example import parse_args
from _example import run

if __name__ == "__main__":
    args = parse_args(__doc__, "runs/cspan_ag_news")
    data, data_kwargs = ag_news_source(args)
    run(
        args,
        "cspan",
        # embedding 300, Bi-LSTM 150 per direction, 16 queries
        {"configuration": "base"},
        data,
        epochs=5,
        sequence_length=256,
        **data_kwargs,
    )
