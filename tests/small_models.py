"""Tiny sizes for every model of `keras_textattn.models.SPECS`, for tests of behaviour (not accuracy).

A new model adds its entry here; tests/models/test_builders.py checks that every model has one.
"""

SMALL = {
    "scalable_attention": {"embedding_dim": 8, "fc_units": 8},
    "dual_axial": {"embedding_dim": 8, "fc_units": 8},
    "hcan": {"units": 8, "num_heads": 2},
    "lama": {"embedding_dim": 8, "gru_units": 4, "num_heads": 3, "mlp_units": 8},
    "cspan": {"embedding_dim": 8, "num_queries": 2},
    "transformer": {"units": 8, "num_heads": 2, "feedforward_units": 16},
    "bigru": {"embedding_dim": 8, "gru_units": 4},
    "kim_cnn": {"embedding_dim": 8, "filters": 4},
}
