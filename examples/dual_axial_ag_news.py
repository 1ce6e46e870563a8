r"""The dual-axial classifier with bigrams on AG News (dual_axial_self_attention.md, sections 4-5).

    python examples/dual_axial_ag_news.py                      # TFDS ag_news_subset (downloads)
    python examples/dual_axial_ag_news.py --small \
        --data ../shared/data/ag_news/train_sample_5k.csv.gz --test-data ../shared/data/ag_news/test.csv.gz
"""

from _ag_news import ag_news_source
from _example import parse_args
from _example import run

if __name__ == "__main__":
    args = parse_args(__doc__, "runs/dual_axial_ag_news")
    data, data_kwargs = ag_news_source(args)
    run(
        args,
        "dual_axial",
        {"variant": "dual_axial"},
        data,
        epochs=5,
        sequence_length=128,
        **data_kwargs,
    )
