"""Speed and memory of each attention layer against keras.layers.MultiHeadAttention,
per Keras backend, and end to end for the paper models and their exports.

    python benchmarks/throughput.py --quick                          # smoke check, about a minute
    python benchmarks/throughput.py                                  # lengths 64..1024, TensorFlow
    python benchmarks/throughput.py --backend tensorflow jax torch   # which backend is fastest per layer
    python benchmarks/throughput.py --backend jax --dtype-policy mixed_bfloat16   # 16-bit compute (GPUs)
    python benchmarks/throughput.py --no-layers --no-end-to-end      # the papers' speed claims alone

Per layer and sequence length (batch and width fixed): examples per second for a
training step (forward + backward + SGD update, `train_on_batch`) and for inference
(`predict_on_batch`), the peak resident memory, and the ratio to MultiHeadAttention of
the same width and heads measured in the same run. Each layer is measured in its own
process, lengths in increasing order, so the process's peak RSS after a length is that
length's peak (approximately: it includes the smaller lengths' high-water mark). Where the
backend computes on a GPU, the memory column is the GPU's peak allocated memory instead
(reset per length on PyTorch and TensorFlow; JAX's high-water mark, as for RSS).

Arithmetic: the FLOPs of each layer's forward pass are counted by XLA (JAX's
`cost_analysis`, when JAX is installed) and divided by the measured inference time;
that is reported as a fraction of this machine's dense float32 matmul throughput,
measured in the same process.

End to end (`--end-to-end`, on by default; TensorFlow; needs ../shared/data): each paper
model at the CPU sizes of accuracy.py on AG News texts: training and inference examples
per second of the Keras model, of the exported SavedModel (raw text in), and the
single-text latency (p50/p99) and size of the TFLite models and of the ONNX model (in
onnxruntime); of the int8 model also how often its label is the Keras model's on 200
training texts it was not calibrated on.

The papers' speed claims (`--no-claims` skips them; `paper_claims.py`): HCAN against HAN,
dual-axial against a MultiHeadAttention encoder, the LAMA Encoder against a one-layer
Transformer encoder, each pair at equal widths in one process.

Writes `throughput.json`, `throughput.md` and `throughput.png` (time against length,
log-log, so the scaling exponent is the slope) to `--output-dir`.
"""

import argparse
import collections
import importlib.util
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import paper_claims

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[1] / "shared" / "data"
BASELINE = "MultiHeadAttention"


def make_layer(name, width, heads):
    """The layer called `name`, sized `width` features and `heads` heads where it has them."""
    import keras

    from keras_textattn import layers

    factories = {
        BASELINE: lambda: keras.layers.MultiHeadAttention(heads, width // heads),
        "ScalableAttention": lambda: layers.ScalableAttention(),
        "TextAxialSelfAttention": lambda: layers.TextAxialSelfAttention(),
        "DualAxialSelfAttention": lambda: layers.DualAxialSelfAttention(),
        "ConvMultiheadSelfAttention": lambda: layers.ConvMultiheadSelfAttention(heads, width),
        "ConvMultiheadTargetAttention": lambda: layers.ConvMultiheadTargetAttention(heads, width),
        "LAMA": lambda: layers.LAMA(num_heads=heads),
        "SemanticSelfAttention": lambda: layers.SemanticSelfAttention(),
        "CascadedSemanticPositional": lambda: layers.CascadedSemanticPositional(),
        "MultiQueryAttention": lambda: layers.MultiQueryAttention(num_queries=16),
    }
    return factories[name]()


LAYERS = [
    BASELINE,
    "ScalableAttention",
    "TextAxialSelfAttention",
    "DualAxialSelfAttention",
    "ConvMultiheadSelfAttention",
    "ConvMultiheadTargetAttention",
    "LAMA",
    "SemanticSelfAttention",
    "CascadedSemanticPositional",
    "MultiQueryAttention",
]
QUICK_LAYERS = [BASELINE, "LAMA"]


def _timed(function, min_seconds=1.0, max_repeats=30):
    """Seconds per call: two warm-up calls, then repeats until `min_seconds` (at least 3)."""
    function()
    function()
    times = []
    while len(times) < 3 or (sum(times) < min_seconds and len(times) < max_repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


Accelerator = collections.namedtuple("Accelerator", ["name", "reset_peak", "peak_mb"])


def _accelerator():
    """This backend's GPU as an `Accelerator`, or None when it computes on the CPU."""
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        if device.platform != "gpu":
            return None
        # JAX cannot reset its high-water mark: with lengths ascending it is that length's peak.
        return Accelerator(
            device.device_kind, lambda: None, lambda: (device.memory_stats() or {}).get("peak_bytes_in_use", 0) / 2**20
        )
    if backend == "torch":
        import torch

        if not torch.cuda.is_available():
            return None
        return Accelerator(
            torch.cuda.get_device_name(),
            torch.cuda.reset_peak_memory_stats,
            lambda: torch.cuda.max_memory_allocated() / 2**20,
        )
    import tensorflow as tf

    if not tf.config.list_logical_devices("GPU"):
        return None
    return Accelerator(
        "GPU:0",
        lambda: tf.config.experimental.reset_memory_stats("GPU:0"),
        lambda: tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20,
    )


def _matmul_flops_per_second(size=1024):
    from keras import ops

    a = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(size, size)).astype("float32"))
    seconds = _timed(lambda: ops.convert_to_numpy(ops.matmul(a, a)), min_seconds=0.5)
    return 2 * size**3 / seconds


def _layer_model(name, length, width, heads):
    import keras

    inputs = keras.Input((length, width))
    layer = make_layer(name, width, heads)
    x = layer(inputs, inputs) if name == BASELINE else layer(inputs)
    if len(x.shape) == 3:
        x = keras.layers.GlobalAveragePooling1D()(x)
    model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Flatten()(x)))
    model.compile(optimizer="sgd", loss="mse")
    return model


def measure_layer(name, lengths, batch, width, heads, min_seconds, dtype_policy):
    """Worker: one JSON line per length for layer `name` on this process's backend."""
    import keras

    keras.config.set_dtype_policy(dtype_policy)

    peak = _matmul_flops_per_second()
    base_rss = _rss_mb()
    accelerator = _accelerator()
    rng = np.random.default_rng(0)
    for length in lengths:
        x = rng.normal(size=(batch, length, width)).astype("float32")
        y = rng.normal(size=(batch, 1)).astype("float32")
        if accelerator:
            accelerator.reset_peak()
        model = _layer_model(name, length, width, heads)
        infer = _timed(lambda: keras.ops.convert_to_numpy(model.predict_on_batch(x)), min_seconds)
        train = _timed(lambda: model.train_on_batch(x, y), min_seconds)
        print(
            json.dumps(
                {
                    "layer": name,
                    "backend": keras.backend.backend(),
                    "length": length,
                    "batch": batch,
                    "width": width,
                    "dtype_policy": dtype_policy,
                    "infer_seconds": infer,
                    "train_seconds": train,
                    "infer_examples_per_second": batch / infer,
                    "train_examples_per_second": batch / train,
                    "peak_rss_mb": _rss_mb() - base_rss,
                    "matmul_flops_per_second": peak,
                    "device": accelerator.name if accelerator else "cpu",
                    "accelerator_peak_mb": accelerator.peak_mb() if accelerator else None,
                }
            ),
            flush=True,
        )


def count_flops(names, lengths, batch, width, heads):
    """Worker (JAX): XLA's FLOP count of each layer's forward pass, one JSON line each."""
    import jax

    for name in names:
        for length in lengths:
            layer = make_layer(name, width, heads)
            shape = (batch, length, width)
            layer.build(shape, shape) if name == BASELINE else layer.build(shape)
            x = jax.numpy.zeros(shape)

            def forward(trainable, non_trainable, x, layer=layer, name=name):
                args = (x, x) if name == BASELINE else (x,)
                return layer.stateless_call(trainable, non_trainable, *args)[0]

            trainable = [v.value for v in layer.trainable_variables]
            non_trainable = [v.value for v in layer.non_trainable_variables]
            analysis = jax.jit(forward).lower(trainable, non_trainable, x).compile().cost_analysis()
            analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis
            print(json.dumps({"layer": name, "length": length, "flops": float(analysis.get("flops", 0.0))}), flush=True)


def _run_worker(backend, arguments):
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, __file__, *arguments], capture_output=True, text=True, env=env)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0:
        print(f"  ({backend} {' '.join(arguments[:3])} failed: {result.stderr.strip().splitlines()[-1:]})", flush=True)
    return rows


def end_to_end(data_dir, models, texts_count, quick):
    """Worker (TensorFlow): the paper models, their SavedModel and TFLite exports, on AG News texts."""
    import keras
    import tensorflow as tf

    sys.path.insert(0, str(HERE))
    from accuracy import builder_arguments

    from keras_textattn import export
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets.formats import read_labelled_texts
    from keras_textattn.models import get_spec
    from keras_textattn.run_folder import save_run
    from keras_textattn.text import TextEncoder

    train_texts, train_labels, _, _ = read_labelled_texts(LocalFile(data_dir / "ag_news" / "train_sample_5k.csv.gz"))
    texts = train_texts[:texts_count]
    labels = np.array([int(label) for label in train_labels[:texts_count]])
    for name in models:
        keras.utils.set_random_seed(0)  # the same weights every run: int8's agreement depends on them
        model_name, options = builder_arguments(name)
        spec = get_spec(model_name)
        encoder = TextEncoder(
            **spec.encoder_options(
                None,
                max_tokens=20000,
                max_sentences=3,
                sequence_length=24 if spec.is_hierarchical() else 64,
                bigram_buckets=20000 if spec.bigrams else 0,
            )
        )
        encoder.adapt(train_texts)
        model = spec.build(
            4,
            vocabulary_size=encoder.vocabulary_size(),
            **spec.shape_arguments(encoder),
            **spec.preset_arguments("cpu"),
            **options,
        )
        model.compile("adam", "sparse_categorical_crossentropy")
        encoded = encoder(tf.constant(texts))
        ids = [e.numpy() for e in encoded] if isinstance(encoded, tuple) else encoded.numpy()
        model.fit(ids, labels, batch_size=32, epochs=1, verbose=0)  # warm-up (tracing)
        start = time.perf_counter()
        model.fit(ids, labels, batch_size=32, epochs=1, verbose=0)
        row = {
            "model": name,
            "parameters": int(model.count_params()),
            "keras_train_examples_per_second": len(texts) / (time.perf_counter() - start),
        }
        model.predict(ids, batch_size=64, verbose=0)
        start = time.perf_counter()
        model.predict(ids, batch_size=64, verbose=0)
        row["keras_infer_examples_per_second"] = len(texts) / (time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as folder:
            folder = pathlib.Path(folder)
            save_run(folder / "run", model, encoder, ["World", "Sports", "Business", "Sci/Tech"], {"model": name})
            served = export.saved_model(folder / "run", folder / "saved_model")
            serve = tf.saved_model.load(str(folder / "saved_model")).signatures["serving_default"]
            batches = [tf.constant(texts[i : i + 64]) for i in range(0, len(texts), 64)]
            seconds = _timed(lambda: [serve(text=b) for b in batches], min_seconds=0.5, max_repeats=5)
            row["saved_model_examples_per_second"] = len(texts) / seconds
            single = [
                _timed(lambda t=t: serve(text=tf.constant([t])), min_seconds=0, max_repeats=3)
                for t in texts[: 20 if quick else 200]
            ]
            row["saved_model_latency_ms_p50"], row["saved_model_latency_ms_p99"] = (
                np.percentile(single, [50, 99]) * 1000
            )
            row["saved_model_bytes"] = served["size_bytes"]
            for quantization in (None, "dynamic", "int8") if quick else export.QUANTIZATIONS:
                key = f"tflite_{quantization or 'float32'}"
                try:
                    lite = export.tflite(
                        folder / "run",
                        folder / f"tflite-{quantization}",
                        quantization=quantization,
                        calibration_texts=train_texts if quantization == "int8" else None,
                    )
                except export.RecurrentInt8Error as error:  # LAMA's BiGRU, CSPAN's BiLSTM; any other refusal is raised
                    row[f"{key}_refused"] = str(error)
                    continue
                row[f"{key}_bytes"] = lite["size_bytes"]
                row[f"{key}_latency_ms_p50"] = lite["latency_ms_p50"]
                row[f"{key}_latency_ms_p99"] = lite["latency_ms_p99"]
                if quantization == "int8":
                    row[f"{key}_argmax_agreement"] = lite["held_out_argmax_agreement"]
            onnx = export.onnx(folder / "run", folder / "onnx")  # float32, one text a call as TFLite's
            row["onnx_bytes"] = onnx["size_bytes"]
            row["onnx_latency_ms_p50"], row["onnx_latency_ms_p99"] = onnx["latency_ms_p50"], onnx["latency_ms_p99"]
        print(json.dumps({key: float(v) if isinstance(v, np.floating) else v for key, v in row.items()}), flush=True)


def _markdown(layer_rows, flops, e2e_rows):
    lines = []
    backends = sorted({r["backend"] for r in layer_rows})
    for backend in backends:
        rows = [r for r in layer_rows if r["backend"] == backend]
        baseline = {r["length"]: r for r in rows if r["layer"] == BASELINE}
        device = rows[0].get("device", "cpu")
        memory, memory_label = (
            ("peak_rss_mb", "peak RSS MB") if device == "cpu" else ("accelerator_peak_mb", "peak GPU MB")
        )
        lines += [
            f"### Layers on {backend} ({device}, {rows[0].get('dtype_policy', 'float32')})",
            "",
            f"| layer | length | train ex/s | infer ex/s | train vs MHA | infer vs MHA "
            f"| {memory_label} | GFLOP fwd | % of matmul peak |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in rows:
            base = baseline.get(r["length"])
            ratio = (lambda key: f"{r[key] / base[key]:.2f}x") if base else (lambda key: "")
            count = flops.get((r["layer"], r["length"]))
            share = f"{100 * count / r['infer_seconds'] / r['matmul_flops_per_second']:.1f}" if count else ""
            lines.append(
                f"| {r['layer']} | {r['length']} | {r['train_examples_per_second']:.0f} | "
                f"{r['infer_examples_per_second']:.0f} "
                f"| {ratio('train_examples_per_second')} | {ratio('infer_examples_per_second')} | {r[memory]:.0f} "
                f"| {'' if not count else f'{count / 1e9:.2f}'} | {share} |"
            )
        lines.append(
            f"\nDense float32 matmul on this device ({backend}): "
            f"{np.median([r['matmul_flops_per_second'] for r in rows]) / 1e9:.0f} GFLOP/s.\n"
        )
    if len(backends) > 1:
        lines += [
            "### Fastest backend per layer (inference, longest length)",
            "",
            "| layer | " + " | ".join(backends) + " | fastest |",
            "| --- | " + " | ".join("---:" for _ in backends) + " | --- |",
        ]
        longest = max(r["length"] for r in layer_rows)
        for layer in dict.fromkeys(r["layer"] for r in layer_rows):
            speeds = {
                r["backend"]: r["infer_examples_per_second"]
                for r in layer_rows
                if r["layer"] == layer and r["length"] == longest
            }
            if speeds:
                lines.append(
                    f"| {layer} | "
                    + " | ".join(f"{speeds[b]:.0f}" if b in speeds else "" for b in backends)
                    + f" | {max(speeds, key=speeds.get)} |"
                )
        lines.append("")
    if e2e_rows:
        lines += [
            "### End to end (TensorFlow, AG News texts, 64 tokens)",
            "",
            "| model | parameters | Keras train ex/s | Keras infer ex/s | SavedModel ex/s | SavedModel p50 / p99 ms "
            "| SavedModel MB "
            "| TFLite float32 MB, p50 / p99 ms | TFLite dynamic MB, p50 / p99 ms | TFLite float16 MB, p50 / p99 ms "
            "| TFLite int8 MB, p50 / p99 ms, argmax agreement | ONNX float32 MB, p50 / p99 ms |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in e2e_rows:

            def lite(key):
                if f"{key}_bytes" not in r:
                    return "refused (recurrent)" if f"{key}_refused" in r else ""
                agreement = f", agrees {r[f'{key}_argmax_agreement']:.3f}" if f"{key}_argmax_agreement" in r else ""
                return (
                    f"{r[f'{key}_bytes'] / 1e6:.2f}, {r[f'{key}_latency_ms_p50']:.2f} / "
                    f"{r[f'{key}_latency_ms_p99']:.2f}{agreement}"
                )

            lines.append(
                f"| {r['model']} | {r['parameters']:,} | {r['keras_train_examples_per_second']:.0f} | "
                f"{r['keras_infer_examples_per_second']:.0f} "
                f"| {r['saved_model_examples_per_second']:.0f} | {r['saved_model_latency_ms_p50']:.1f} / "
                f"{r['saved_model_latency_ms_p99']:.1f} "
                f"| {r['saved_model_bytes'] / 1e6:.2f} | {lite('tflite_float32')} | {lite('tflite_dynamic')} | "
                f"{lite('tflite_float16')} "
                f"| {lite('tflite_int8')} | {lite('onnx')} |"
            )
    return "\n".join(lines)


def _plot(layer_rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    backends = {r["backend"] for r in layer_rows}
    backend = "tensorflow" if "tensorflow" in backends else min(backends)
    for layer in dict.fromkeys(r["layer"] for r in layer_rows):
        rows = sorted(
            (r for r in layer_rows if r["layer"] == layer and r["backend"] == backend), key=lambda r: r["length"]
        )
        if rows:
            axes.loglog(
                [r["length"] for r in rows],
                [r["infer_seconds"] * 1000 for r in rows],
                marker="o",
                linestyle="--" if layer == BASELINE else "-",
                label=layer,
            )
    axes.set_xlabel("sequence length (tokens)")
    axes.set_ylabel("inference time per batch (ms)")
    axes.set_title(f"Time against length, log-log ({backend}); slope = scaling exponent")
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", nargs="+", default=["tensorflow"], choices=["tensorflow", "jax", "torch"])
    parser.add_argument("--layers", nargs="+", choices=LAYERS)
    parser.add_argument("--lengths", nargs="+", type=int)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument(
        "--dtype-policy",
        default="float32",
        choices=["float32", "mixed_float16", "mixed_bfloat16"],
        help="Keras's dtype policy for the layer measurements (16-bit compute, float32 weights)",
    )
    parser.add_argument("--no-end-to-end", dest="end_to_end", action="store_false")
    parser.add_argument("--no-claims", dest="claims", action="store_false", help="skip the papers' speed claims")
    parser.add_argument("--no-layers", dest="measure_layers", action="store_false", help="end to end only")
    parser.add_argument(
        "--data-dir", type=pathlib.Path, default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", DEFAULT_DATA))
    )
    parser.add_argument("--output-dir", default="benchmarks/results")
    parser.add_argument(
        "--min-seconds", type=float, help="time each measurement for at least this long (default 1, --quick 0.1)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="MultiHeadAttention and LAMA at lengths 64 and 128, 0.1 s timings; end to end, scalable attention "
        "and its float32, dynamic and int8 TFLite models",
    )
    parser.add_argument("--worker", choices=["layer", "flops", "end-to-end", "claims"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    layers_ = args.layers or (QUICK_LAYERS if args.quick else LAYERS)
    lengths = args.lengths or ([64, 128] if args.quick else [64, 128, 256, 512, 1024])
    sizes = [str(args.batch), str(args.width), str(args.heads)]
    min_seconds = args.min_seconds if args.min_seconds is not None else (0.1 if args.quick else 1.0)
    e2e_models = (
        ["scalable_attention"]
        if args.quick
        else ["scalable_attention", "dual_axial", "hcan", "hcan_ln1e-3", "lama", "cspan"]
    )
    if args.worker == "layer":
        return measure_layer(layers_[0], lengths, args.batch, args.width, args.heads, min_seconds, args.dtype_policy)
    if args.worker == "flops":
        return count_flops(layers_, lengths, args.batch, args.width, args.heads)
    if args.worker == "end-to-end":
        return end_to_end(args.data_dir, e2e_models, 256 if args.quick else 2048, args.quick)
    if args.worker == "claims":
        return paper_claims.measure(min_seconds, args.quick, _timed)

    common = [
        "--lengths",
        *map(str, lengths),
        "--batch",
        sizes[0],
        "--width",
        sizes[1],
        "--heads",
        sizes[2],
        "--min-seconds",
        str(min_seconds),
    ]
    layer_rows = []
    for backend in args.backend if args.measure_layers else []:
        for layer in layers_:
            print(f"{backend}: {layer} at lengths {lengths}", flush=True)
            rows = _run_worker(
                backend, ["--worker", "layer", "--layers", layer, "--dtype-policy", args.dtype_policy, *common]
            )
            for r in rows:
                print(
                    f"  {r['length']:5d}: train {r['train_examples_per_second']:8.0f} ex/s, "
                    f"infer {r['infer_examples_per_second']:8.0f} ex/s, peak {r['peak_rss_mb']:.0f} MB",
                    flush=True,
                )
            layer_rows += rows
    flops = {}
    if args.measure_layers and importlib.util.find_spec("jax"):
        rows = _run_worker("jax", ["--worker", "flops", "--layers", *layers_, *common])
        flops = {(r["layer"], r["length"]): r["flops"] for r in rows}
    elif args.measure_layers:
        print("JAX is not installed: no FLOP counts", flush=True)
    e2e_rows = []
    if args.end_to_end:
        if (args.data_dir / "ag_news").is_dir():
            print(f"end to end: {', '.join(e2e_models)}", flush=True)
            e2e_rows = _run_worker(
                "tensorflow",
                ["--worker", "end-to-end", "--data-dir", str(args.data_dir)] + (["--quick"] if args.quick else []),
            )
        else:
            print(f"end to end skipped: no AG News at {args.data_dir} (set KERAS_TEXTATTN_DATA)", flush=True)
    claim_rows = []
    if args.claims:
        print("the papers' speed claims: HCAN vs HAN, dual-axial vs MultiHeadAttention, LAMA vs TE", flush=True)
        claim_rows = _run_worker(
            "tensorflow",
            ["--worker", "claims", "--min-seconds", str(min_seconds)] + (["--quick"] if args.quick else []),
        )
    os.makedirs(args.output_dir, exist_ok=True)
    table = _markdown(layer_rows, flops, e2e_rows)
    if claim_rows:
        table += "\n\n" + paper_claims.markdown(claim_rows)
    with open(os.path.join(args.output_dir, "throughput.json"), "w", encoding="utf-8") as handle:
        json.dump(
            {
                "layers": layer_rows,
                "flops": [{"layer": k[0], "length": k[1], "flops": v} for k, v in flops.items()],
                "end_to_end": e2e_rows,
                "claims": claim_rows,
                "arguments": vars(args) | {"data_dir": str(args.data_dir)},
            },
            handle,
            indent=1,
        )
    with open(os.path.join(args.output_dir, "throughput.md"), "w", encoding="utf-8") as handle:
        handle.write(table + "\n")
    if layer_rows:
        _plot(layer_rows, os.path.join(args.output_dir, "throughput.png"))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
