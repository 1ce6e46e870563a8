r"""The scalable attention classifier on AG News (scalable_attention.md, sections 3-4).

    python examples/scalable_attention_ag_news.py                      # TFDS ag_news_subset (downloads)
    python examples/scalable_attention_ag_news.py --small \
        --data ../shared/data/ag_news/train_sample_5k.csv.gz --test-data ../shared/data/ag_news/test.csv.gz
"""

from _ag_news import ag_news_source
from _example import parse_args
from _example import run

if __name__ == "__main__":
    args = parse_args(__doc__, "runs/scalable_attention_ag_news")
    data, data_kwargs = ag_news_source(args)
    run(
        args,
        "scalable_attention",
        {},  # embedding 100, one softplus sublayer (section 3.2)
        data,
        epochs=5,
        sequence_length=128,
        **data_kwargs,
    )
