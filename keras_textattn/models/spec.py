"""`ModelSpec`: what the rest of the package knows about a model, kept beside its builder.

Training, tuning and the benchmarks read a model's spec instead of naming models: which
inputs the encoder must give it (hashed bigrams, `(sentences, words)` ids), how the
builder's shape arguments follow from the encoder, and the builder arguments that
`train` uses by default on a CPU (`preset="cpu"`) instead of the paper's sizes
(`preset="paper"`: the builder's own defaults, and the paper's best variant where the
builder's default is another); `preset="fast"` has the cpu preset's.
"""

import dataclasses
import inspect

from keras_textattn.layers._attention_utils import check_bool
from keras_textattn_config.train_config import DEFAULT_BIGRAM_BUCKETS
from keras_textattn_config.train_config import PRESETS

# Builder arguments that training and tuning give the builder themselves (from the encoder, its
# vocabulary and the run), each with where a user sets it instead; None: nowhere.
GIVEN_BY_TRAINING = {
    "vocabulary_size": "max_tokens (--max-tokens)",
    "sequence_length": "sequence_length (--sequence-length)",
    "max_sentences": "max_sentences (--max-sentences)",
    "bigram_buckets": "bigram_buckets (--bigram-buckets)",
    "multi_label": "multi_label (--multi-label)",
    "encoder": None,
    "name": None,
}


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model's builder and what it needs.

    Attributes:
        name: the name `train`, the CLI and the tuner configs use.
        build: the builder, `build(num_classes, vocabulary_size=..., <shape arguments>, **kwargs)`.
        bigrams: the model reads hashed bigram ids beside the token ids by default (its
            paper's input); every model reads them when given `bigram_buckets`.
        hierarchical: the model reads `(sentences, words)` ids; a builder argument
            of that name (HCAN's flat variant) overrides it.
        cpu_defaults: builder arguments of the "cpu" preset (sizes that train in
            minutes on 2 cores, and those `benchmarks/accuracy.py` measures); the
            "paper" preset is the builder's own defaults and `best_variant`.
        best_variant: builder arguments both presets add: the variant the paper reports as
            its best, where the builder's default is another (LAMA: LAMA+ctx).
        longest_text: the most tokens per text `train` and `tune` choose from the
            training texts when no `sequence_length` is given (longer texts are cut);
            None: `choose_lengths`' limit (256).
        embedding_size_argument: the builder argument that sets the token embedding's
            size (what a vectors file's dimension must match).
        paper_training: `train()` arguments of the paper's recipe (e.g. LAMA's word2vec
            embeddings and early stopping with patience 5), the defaults of the "paper"
            preset for those a user leaves unset.
        cpu_training: `train()` arguments of the "cpu" preset for those a user leaves
            unset, where held-out data preferred them to `train()`'s own defaults
            (scalable attention: the cosine schedule).
        vectors_arguments: builder arguments that fit the token embedding to the cpu preset's
            default vectors (`DEFAULT_VECTORS`, 50-d), for the models held-out data preferred
            starting from them; empty: the model starts from random vectors unless given some.
        reads_any_length: the classifier's token ids may be shorter than the length it was
            built for (hierarchical: fewer sentences, shorter sentences), with the outputs of
            the same ids padded to it: `train` then cuts each batch's trailing padding
            (`datasets.length_sorted_batches`). Not where a layer's weights span the length
            (dual-axial's feature axis); learned positions (HCAN's) are read from the first.
    """

    name: str
    build: object
    bigrams: bool = False
    hierarchical: bool = False
    cpu_defaults: dict = dataclasses.field(default_factory=dict)
    best_variant: dict = dataclasses.field(default_factory=dict)
    longest_text: int = None
    embedding_size_argument: str = "embedding_dim"
    paper_training: dict = dataclasses.field(default_factory=dict)
    cpu_training: dict = dataclasses.field(default_factory=dict)
    vectors_arguments: dict = dataclasses.field(default_factory=dict)
    reads_any_length: bool = False

    def builder_arguments(self):
        """The names the builder takes besides `num_classes`."""
        return [name for name in inspect.signature(self.build).parameters if name != "num_classes"]

    def settable_arguments(self):
        """The builder arguments a user sets (`train(model_kwargs=...)`, `--set`, a tuner config's
        `fixed` and searched ones): all but those training gives it (`GIVEN_BY_TRAINING`)."""
        return [name for name in self.builder_arguments() if name not in GIVEN_BY_TRAINING]

    def flag_arguments(self):
        """The builder arguments a user sets that are True or False (those whose default is a bool)."""
        return [
            name
            for name, parameter in inspect.signature(self.build).parameters.items()
            if isinstance(parameter.default, bool) and name not in GIVEN_BY_TRAINING
        ]

    def is_hierarchical(self, model_kwargs=None):
        hierarchical = (model_kwargs or {}).get("hierarchical", self.hierarchical)
        check_bool(f"{self.name} builder", "hierarchical", hierarchical)
        return bool(hierarchical)

    def encoder_options(
        self,
        model_kwargs=None,
        *,
        max_tokens=20000,
        min_frequency=1,
        sequence_length=None,
        max_sentences=None,
        split_long_sentences=False,
        bigram_buckets=None,
        bigrams_of=None,
    ):
        """The `TextEncoder` arguments for this model (with these builder arguments).
        Lengths left None are chosen from the data by `train` (`choose_lengths`);
        `split_long_sentences` is for hierarchical texts; `bigram_buckets` None is the
        model's default (`DEFAULT_BIGRAM_BUCKETS` when `bigrams`, else none), 0 none;
        `bigrams_of` None is the encoder's default."""
        options = dict(max_tokens=max_tokens, min_frequency=min_frequency, sequence_length=sequence_length)
        if self.is_hierarchical(model_kwargs):
            options.update(hierarchical=True, max_sentences=max_sentences, split_long_sentences=split_long_sentences)
        if bigram_buckets is None:
            bigram_buckets = DEFAULT_BIGRAM_BUCKETS if self.bigrams else 0
        if bigram_buckets:
            options["bigram_buckets"] = bigram_buckets
            if bigrams_of is not None:
                options["bigrams_of"] = bigrams_of
        return options

    def shape_arguments(self, encoder):
        """The builder arguments that must agree with `encoder`'s output shape."""
        shape = {"sequence_length": encoder.sequence_length}  # words per sentence when hierarchical
        if encoder.hierarchical:
            shape["max_sentences"] = encoder.max_sentences
        if encoder.bigram_buckets:
            shape["bigram_buckets"] = encoder.bigram_buckets
        return shape

    def embedding_size(self, arguments):
        """The token embedding's size for the builder `arguments`: theirs, else the builder's default."""
        name = self.embedding_size_argument
        return arguments.get(name, inspect.signature(self.build).parameters[name].default)

    def preset_arguments(self, preset):
        """Builder arguments of a preset: "cpu", "fast" (the cpu preset's) or "paper"."""
        return {**self.best_variant, **(self.cpu_defaults if _checked(preset) != "paper" else {})}

    def training_defaults(self, preset):
        """`train()` arguments of a preset: the paper's recipe for "paper", `cpu_training` for "cpu"
        and "fast" (whose options chosen from the training rows `train` adds: `FAST_TRAINING`)."""
        return dict(self.paper_training if _checked(preset) == "paper" else self.cpu_training)


def _checked(preset):
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; use one of {', '.join(PRESETS)}")
    return preset
