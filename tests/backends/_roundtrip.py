"""Run under one backend: load each model file, predict, save again (for test_cross_backend)."""

import sys

import keras
import numpy as np

import keras_textattn  # noqa: F401  (registers the layers)

folder, backend = sys.argv[1], keras.backend.backend()
for name in sys.argv[2:]:
    model = keras.models.load_model(f"{folder}/{name}.keras")
    inputs = np.load(f"{folder}/{name}_inputs.npy")
    # predict: one compiled forward pass (JAX eager dispatches op by op: 4x slower here)
    np.save(f"{folder}/{name}_{backend}.npy", model.predict(inputs, verbose=0))
    model.save(f"{folder}/{name}_saved_by_{backend}.keras")
print("ok", backend)
