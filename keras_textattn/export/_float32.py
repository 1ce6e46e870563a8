"""Exports compute in float32, whatever policy the model was trained under."""


def computing_in_float32(model):
    """`model`, or, when it was built under a mixed-precision policy (`mixed_float16`,
    `mixed_bfloat16`), the same model computing in float32 with the same weights (mixed
    precision keeps every weight in float32, so none is rounded).

    Both exports compute in float32: the artifact then runs on any server or device
    (16-bit compute is slow or missing on most CPUs, and TFLite's builtin ops take no
    float16 activations), it reproduces the trained weights without a 16-bit rounding
    that differs between graphs (measured: 8e-4 between the Keras model and its
    SavedModel under mixed_bfloat16), and its verification keeps its tolerance."""

    def float32(value, key=None):
        if key == "dtype" and isinstance(value, dict) and value.get("class_name") == "DTypePolicy":
            name = value["config"]["name"]
            return "float32" if name.startswith("mixed_") else value
        if isinstance(value, dict):
            return {k: float32(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [float32(v) for v in value]
        return value

    config = model.get_config()
    converted = float32(config)
    if converted == config:
        return model
    copy = model.__class__.from_config(converted)
    copy.set_weights(model.get_weights())
    return copy
