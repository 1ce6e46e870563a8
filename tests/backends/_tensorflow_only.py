"""The errors of the TensorFlow-only entry points on this process's backend (for test_any_backend)."""

import json


def refusals():
    import keras_textattn.datasets as datasets
    import keras_textattn.run_folder as run_folder
    import keras_textattn.text as text
    import keras_textattn.training as training

    messages = []
    calls = (
        lambda: text.TextEncoder(),
        lambda: datasets.load_dataset("x.csv"),
        lambda: training.train("lama", "x.csv"),
        lambda: run_folder.load_encoder("run/encoder.keras"),
    )  # Classifier, predict, load_run
    for call in calls:
        try:
            call()
        except RuntimeError as error:
            messages.append(str(error))
    return messages


if __name__ == "__main__":
    print(json.dumps(refusals()))
