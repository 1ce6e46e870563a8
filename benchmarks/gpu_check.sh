#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU (driver installed, a package index reachable),
# from the repository root:
#
#     bash benchmarks/gpu_check.sh                 # results in benchmarks/results/gpu_check/
#     KERAS_TEXTATTN_DATA=/data PRESET=cpu bash benchmarks/gpu_check.sh /tmp/gpu
#
# It installs TensorFlow with CUDA in its own environment (.venv-gpu), checks that TensorFlow
# sees a GPU, trains each paper model for one epoch on IMDB under tf.distribute.MirroredStrategy
# (`--distribute mirrored`, every visible GPU), runs `throughput.py` on the GPU (layers and the
# papers' claims) and the layer tests, and writes one file, `gpu_check.json`, with every figure.
# A step that fails is recorded as failed and the others still run; the exit status is 1 then.
set -uo pipefail

OUT=${1:-benchmarks/results/gpu_check}
DATA=${KERAS_TEXTATTN_DATA:-../shared/data}
PRESET=${PRESET:-paper}
MODELS=(scalable_attention dual_axial hcan lama cspan)
mkdir -p "$OUT/runs"
failed=()

step() {  # step NAME COMMAND...: run COMMAND, its output in $OUT/NAME.log, its status remembered
    local name=$1
    shift
    echo "== $name"
    if ! "$@" >"$OUT/$name.log" 2>&1; then
        failed+=("$name")
        tail -5 "$OUT/$name.log"
    fi
}

if [ ! -f "$DATA/imdb/train.csv.gz" ]; then
    echo "gpu_check: no imdb/train.csv.gz in $DATA; set KERAS_TEXTATTN_DATA" >&2
    exit 2
fi
python3 -m venv .venv-gpu && . .venv-gpu/bin/activate || exit 2
step install pip install "tensorflow[and-cuda]~=2.21.0" -e ".[test]" || exit 2
step gpu_visible python -c "import tensorflow as tf, sys; gpus = tf.config.list_physical_devices('GPU'); \
print(gpus); sys.exit(0 if gpus else 'TensorFlow sees no GPU')"
for model in "${MODELS[@]}"; do
    step "train_$model" keras-textattn train --model "$model" --preset "$PRESET" --distribute mirrored --epochs 1 \
        --data "$DATA/imdb/train.csv.gz" --test-data "$DATA/imdb/test.csv.gz" --output "$OUT/runs/$model"
done
step throughput python benchmarks/throughput.py --no-end-to-end --output-dir "$OUT/throughput"
step layer_tests python -m pytest -q tests/layers --junitxml "$OUT/layer_tests.xml"

python - "$OUT" "$PRESET" "${failed[@]}" <<'EOF'
import json, pathlib, subprocess, sys
import xml.etree.ElementTree as ElementTree

out, preset, failed = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
gpus = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                      capture_output=True, text=True).stdout.strip().splitlines()
runs = {}
for metrics in sorted((out / "runs").glob("*/metrics.json")):
    runs[metrics.parent.name] = json.loads(metrics.read_text())
throughput = out / "throughput" / "throughput.json"
tests = out / "layer_tests.xml"
suite = ElementTree.parse(tests).getroot().find("testsuite") if tests.exists() else None
result = {
    "gpus": gpus,
    "preset": preset,
    "failed_steps": failed,
    "training": runs,
    "throughput": json.loads(throughput.read_text()) if throughput.exists() else None,
    "layer_tests": None if suite is None else {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")},
}
(out / "gpu_check.json").write_text(json.dumps(result, indent=1) + "\n")
print(f"wrote {out / 'gpu_check.json'}; failed steps: {', '.join(failed) or 'none'}")
EOF
[ ${#failed[@]} -eq 0 ]
