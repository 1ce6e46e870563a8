"""AG News for the examples: TFDS ag_news_subset, or the local files in ../shared/data/ag_news."""

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


def ag_news_source(args):
    """`(data, train_kwargs)` for `train()`.

    `--data` is a CSV with header label,text (labels 0-3, like the 5,000-row sample);
    `--test-data` is AG's official test.csv (no header; class 1-4, title, description).
    """
    from keras_textattn.datasets import LocalFile  # here, so that --help does not wait for TensorFlow

    if not args.data:
        return "ag_news_subset", {"text_column": ["title", "description"]}
    source = {"train": LocalFile(args.data)}
    if args.test_data:
        source["test"] = LocalFile(args.test_data, text_column=[1, 2], label_column=0, header=False, label_offset=1)
    return source, {"label_names": LABELS}
