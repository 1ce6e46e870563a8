"""Hyperparameter search with keras-tuner, from tuner configs: YAML files, or the names of the
shipped ones in `configs/` (`tuner_configs/` in a checkout; TensorFlow backend)."""

from keras_textattn.tuning.config import ConfigError
from keras_textattn.tuning.config import TuningConfig
from keras_textattn.tuning.config import load_config
from keras_textattn.tuning.config import shipped_configs
from keras_textattn.tuning.search import TUNER_CLASSES
from keras_textattn.tuning.search import TextAttentionHyperModel
from keras_textattn.tuning.search import tune

__all__ = [
    "ConfigError",
    "TUNER_CLASSES",
    "TextAttentionHyperModel",
    "TuningConfig",
    "load_config",
    "shipped_configs",
    "tune",
]
