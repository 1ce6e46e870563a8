"""HCAN (hcan_hierarchical_conv_attention.txt, sections 3.6-3.8, Figure 1) and its variants."""

import keras
from keras import ops

from keras_textattn.layers import ConvMultiheadSelfAttention
from keras_textattn.layers import ConvMultiheadTargetAttention
from keras_textattn.layers import DocumentSentences
from keras_textattn.layers import MaskedGlobalMaxPooling1D
from keras_textattn.layers import ParallelConvMultiheadSelfAttention
from keras_textattn.layers import PositionEmbedding
from keras_textattn.layers._attention_utils import check_bool
from keras_textattn.models._inputs import classifier_head
from keras_textattn.models._inputs import embed_tokens
from keras_textattn.models._inputs import padding_mask
from keras_textattn.models._inputs import sentence_rows
from keras_textattn.models._inputs import text_inputs
from keras_textattn.models.spec import ModelSpec


def _hierarchy(x, mask, max_length, units, num_heads, dropout, parallel, pooling, layer_norm_epsilon, prefix):
    """One hierarchy of Figure 1: positions, dropout, self-attention(s), target attention.

    `parallel=False` uses one convolutional self-attention, `pooling="max"` a
    masked max pool instead of the target attention: the paper's Table 2 variants.
    """
    x = PositionEmbedding(max_length, name=f"{prefix}_positions")(x)
    x = keras.layers.Dropout(dropout, name=f"{prefix}_dropout")(x)
    if parallel:
        x = ParallelConvMultiheadSelfAttention(
            num_heads, units, dropout=dropout, epsilon=layer_norm_epsilon, name=f"{prefix}_self_attention"
        )(x, mask=mask)
    else:
        x = ConvMultiheadSelfAttention(num_heads, units, dropout=dropout, name=f"{prefix}_self_attention")(x, mask=mask)
    if pooling == "max":
        return MaskedGlobalMaxPooling1D(name=f"{prefix}_maxpool")(x, mask=mask)
    return ConvMultiheadTargetAttention(num_heads, units, dropout=dropout, name=f"{prefix}_target_attention")(
        x, mask=mask
    )


def build_hcan_classifier(
    num_classes,
    vocabulary_size=None,
    encoder=None,
    sequence_length=None,
    max_sentences=None,
    units=512,
    num_heads=8,
    dropout=0.1,
    hierarchical=True,
    parallel=True,
    pooling="target",
    bigram_buckets=0,
    layer_norm_epsilon=1e-6,
    multi_label=False,
    name="hcan",
):
    """Hierarchical Convolutional Attention Network.

    Each hierarchy: learned position embeddings (3.6), dropout 0.1 on the embeddings
    (3.8), the parallel pair of convolutional multihead self-attentions, multiplied
    and layer-normalised (3.4), then convolutional multihead target attention (3.5).
    Word hierarchy per sentence, sentence hierarchy per document (3.7); paper size
    512 with 8 heads; the word embeddings have size `units`.

    Inputs: with `hierarchical=True` ids `(batch, max_sentences, sequence_length)`,
    `sequence_length` words per sentence (an encoder with `hierarchical=True` and fixed
    sizes, whose `sequence_length` means the same, or the two sizes; the paper reads whole
    documents: `TextEncoder(split_long_sentences=True)` reads text without sentence ends
    past its first row); else the flat
    variant on `(batch, sequence_length)`. `parallel=False` (one self-attention) and
    `pooling="max"` are the paper's other Table 2 variants. `bigram_buckets`: hashed
    bigrams added to the word embeddings (`embed_tokens`; not the paper's); hierarchical,
    the bigram ids have the token ids' shape and pair words of the same sentence row.
    `layer_norm_epsilon`: of the parallel self-attentions' layer normalisation (Eq. 4; the paper
    gives none). 1e-3 instead of 1e-6 is for full-integer (int8) export: the normalised rows'
    variance is tiny, and the small epsilon amplifies it past what int8 resolves.
    """
    check_bool("build_hcan_classifier", "hierarchical", hierarchical)
    check_bool("build_hcan_classifier", "parallel", parallel)
    if pooling not in ("target", "max"):
        raise ValueError(f"`pooling` must be 'target' or 'max'. Received: pooling={pooling!r}")
    if encoder is not None:
        if encoder.hierarchical != hierarchical:
            raise ValueError(
                f"The encoder's hierarchical={encoder.hierarchical} must match hierarchical={hierarchical}."
            )
        if max_sentences is not None and max_sentences != encoder.max_sentences:
            raise ValueError(
                f"max_sentences={max_sentences} disagrees with the encoder's {encoder.max_sentences}; "
                "give one or the other"
            )
        max_sentences = encoder.max_sentences
    words = encoder.sequence_length if encoder is not None else sequence_length
    if words is None or (hierarchical and max_sentences is None):
        raise ValueError(
            "HCAN's learned position embeddings need fixed sizes: give sequence_length (and max_sentences when "
            "hierarchical), or an encoder with a fixed sequence_length (and max_sentences)."
        )
    shape = (max_sentences, words) if hierarchical else None
    model_inputs = text_inputs(encoder, vocabulary_size, sequence_length, bigram_buckets, hierarchical_shape=shape)
    inputs, ids = model_inputs.inputs, model_inputs.token_ids
    options = dict(
        units=units,
        num_heads=num_heads,
        dropout=dropout,
        parallel=parallel,
        pooling=pooling,
        layer_norm_epsilon=layer_norm_epsilon,
    )
    if not hierarchical:
        x = _hierarchy(embed_tokens(model_inputs, units), padding_mask(ids), words, prefix="word", **options)
        return keras.Model(inputs, classifier_head(x, num_classes, multi_label), name=name)
    sentence_inputs = sentence_rows(model_inputs)
    sentence_ids = sentence_inputs.token_ids
    sentence_vectors = _hierarchy(
        embed_tokens(sentence_inputs, units), padding_mask(sentence_ids), words, prefix="word", **options
    )
    sentences = DocumentSentences(name="document_sentences")([sentence_vectors, ids])
    sentence_mask = ops.any(padding_mask(ids), axis=-1)
    x = _hierarchy(sentences, sentence_mask, max_sentences, prefix="sentence", **options)
    return keras.Model(inputs, classifier_head(x, num_classes, multi_label), name=name)


# Sec. 4: word embeddings from word2vec trained on the dataset "using a minimum word frequency of 5": rarer
# words have no vector, and we leave them out of the vocabulary (min_frequency 5; our reading). Not taken
# from sec. 4.3: Adam at 2e-5 with one document per step (no batching); at our batches of 32 that rate
# barely moves. cpu preset: 64 wide, 4 heads (an order of magnitude faster than the paper's 512 and 8 on
# 2 cores).
SPEC = ModelSpec(
    "hcan",
    build_hcan_classifier,
    hierarchical=True,
    cpu_defaults={"units": 64, "num_heads": 4},
    embedding_size_argument="units",
    paper_training={"embeddings": "word2vec", "min_frequency": 5},
    reads_any_length=True,
)
