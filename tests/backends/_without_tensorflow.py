"""Run under JAX or PyTorch with TensorFlow unimportable, as where it is not installed: import
the package, build each paper model (`sys.argv[2]`: JSON of `{name: [kwargs, input shape]}`),
predict, save to and load from `sys.argv[1]`. Prints the names of the imported modules of
TensorFlow's packages (JSON) last."""

import importlib.abc
import importlib.machinery
import json
import sys

TENSORFLOW = ("tensorflow", "tensorflow_text", "tensorflow_datasets")


class NoTensorFlow(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import tensorflow` fails as if it were not installed; `importlib.util.find_spec` (which
    PyTorch asks of it) still answers without importing it."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in TENSORFLOW:
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def exec_module(self, module):
        raise ModuleNotFoundError(f"No module named {module.__name__!r}", name=module.__name__)


sys.meta_path.insert(0, NoTensorFlow())

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_textattn.layers  # noqa: E402, F401  (the package, then its layers)
from keras_textattn.models import build_model  # noqa: E402

folder = sys.argv[1]
for name, (kwargs, shape) in json.loads(sys.argv[2]).items():
    model = build_model(name, 3, vocabulary_size=40, **kwargs)
    ids = np.random.default_rng(0).integers(1, 40, (2, *shape)).astype("int32")
    model.save(f"{folder}/{name}.keras")
    loaded = keras.models.load_model(f"{folder}/{name}.keras")
    # predict: one compiled forward pass (JAX eager dispatches op by op: 4x slower here)
    np.testing.assert_allclose(loaded.predict(ids, verbose=0), model.predict(ids, verbose=0), atol=1e-6)
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] in TENSORFLOW)))
