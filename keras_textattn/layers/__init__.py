"""The five papers' attention mechanisms as Keras 3 layers (`keras.ops` only, any backend)."""

from keras_textattn.layers.cspan import CascadedSemanticPositional
from keras_textattn.layers.cspan import MultiQueryAttention
from keras_textattn.layers.cspan import SemanticSelfAttention
from keras_textattn.layers.dual_axial_attention import DualAxialSelfAttention
from keras_textattn.layers.dual_axial_attention import FeatureAxialSelfAttention
from keras_textattn.layers.dual_axial_attention import TextAxialSelfAttention
from keras_textattn.layers.hcan_attention import ConvMultiheadSelfAttention
from keras_textattn.layers.hcan_attention import ConvMultiheadTargetAttention
from keras_textattn.layers.hcan_attention import ParallelConvMultiheadSelfAttention
from keras_textattn.layers.hierarchy import DocumentSentences
from keras_textattn.layers.hierarchy import SentenceRows
from keras_textattn.layers.lama import LAMA
from keras_textattn.layers.pooling import MaskedGlobalAveragePooling1D
from keras_textattn.layers.pooling import MaskedGlobalMaxPooling1D
from keras_textattn.layers.position_embedding import PositionEmbedding
from keras_textattn.layers.scalable_attention import ScalableAttention

__all__ = [
    "CascadedSemanticPositional",
    "ConvMultiheadSelfAttention",
    "ConvMultiheadTargetAttention",
    "DocumentSentences",
    "DualAxialSelfAttention",
    "FeatureAxialSelfAttention",
    "LAMA",
    "MaskedGlobalAveragePooling1D",
    "MaskedGlobalMaxPooling1D",
    "MultiQueryAttention",
    "ParallelConvMultiheadSelfAttention",
    "PositionEmbedding",
    "ScalableAttention",
    "SemanticSelfAttention",
    "SentenceRows",
    "TextAxialSelfAttention",
]
