#!/usr/bin/env bash
# The GPU check, run from inside the folder `make gpu-bundle` builds, on a machine with an
# NVIDIA GPU, CUDA drivers and a Python 3.12 with PyTorch, CuPy, JAX and pytest:
#   ./run.sh LOGDIR
# Runs the Rust GPU tests (the CUDA backend against the CPU engine), the Python GPU tests
# (against PyTorch, DLPack/CAI round trips, IPC between processes) and the GPU benchmark;
# writes env.txt, rust.txt, pytest.txt and bench_cuda.txt into LOGDIR.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LOG=${1:-$HERE/logs}
mkdir -p "$LOG"
PY=${PYTHON:-python3}
# The binaries travel gzipped (the bundle must stay under 64 MiB).
for f in "$HERE/cuda_gpu.gz" "$HERE"/python/strata/*.so.gz; do
    [ -e "$f" ] && gunzip -f "$f"
done
chmod +x "$HERE/cuda_gpu"
# NVRTC and cuBLAS come from the CUDA toolkit or from the nvidia-* wheels PyTorch brings.
LIBS=$($PY - <<'PYEOF'
import glob, os, site
dirs = set()
for sp in site.getsitepackages():
    for lib in glob.glob(os.path.join(sp, "nvidia", "**", "lib"), recursive=True):
        if glob.glob(os.path.join(lib, "libnvrtc.so*")) or glob.glob(os.path.join(lib, "libcublas.so*")):
            dirs.add(lib)
print(":".join(sorted(dirs)))
PYEOF
)
export LD_LIBRARY_PATH="$LIBS:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PYTHONPATH="$HERE/python:$HERE/tests/gpu:${PYTHONPATH:-}"
export STRATA_KERNEL_CACHE="${STRATA_KERNEL_CACHE:-$HERE/kernel-cache}"
export PYTHONUNBUFFERED=1
{
    date -u
    nvidia-smi
    $PY -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, torch.cuda.get_device_name())'
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} > "$LOG/env.txt" 2>&1
head -20 "$LOG/env.txt"
status=0
echo "== Python GPU tests"
start=$SECONDS
# PYTEST_SHARDS processes at once, each taking every n-th test (conftest.py).
SHARDS=${PYTEST_SHARDS:-6}
pids=()
for ((i = 0; i < SHARDS; i++)); do
    STRATA_GPU_SHARD="$i/$SHARDS" timeout -s INT -k 15 "${PYTEST_TIMEOUT:-300}" \
        $PY -m pytest -q -rfEs -p no:cacheprovider --maxfail=100 -o addopts="" \
        "$HERE/tests/gpu" > "$LOG/pytest_$i.txt" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
cat "$LOG"/pytest_*.txt > "$LOG/pytest.txt"
grep -hE "^[0-9]+ (passed|failed)|passed|failed" "$LOG"/pytest_*.txt | grep -E " in [0-9.]+s" | tail -"$SHARDS"
grep -hE "^(FAILED|ERROR|SKIPPED)" "$LOG"/pytest_*.txt | head -80
echo "(pytest: $((SECONDS - start)) s)"
echo "== Rust GPU tests"
# After the Python tests: most kernels are then in the disk cache (STRATA_KERNEL_CACHE).
start=$SECONDS
# The allocator test counts device memory: alone, after the others (run in parallel).
timeout "${RUST_TIMEOUT:-200}" "$HERE/cuda_gpu" --test-threads 16 --skip caching_allocator > "$LOG/rust.txt" 2>&1 || status=1
timeout 60 "$HERE/cuda_gpu" --test-threads 1 caching_allocator >> "$LOG/rust.txt" 2>&1 || status=1
grep -E "^test |test result|panicked|FAILED" "$LOG/rust.txt" | tail -30
echo "(rust: $((SECONDS - start)) s)"
echo "== GPU benchmark"
start=$SECONDS
timeout "${BENCH_TIMEOUT:-150}" $PY "$HERE/bench/bench_cuda.py" --out "$LOG" > "$LOG/bench_stdout.txt" 2>&1 || status=1
tail -40 "$LOG/bench_stdout.txt"
echo "(bench: $((SECONDS - start)) s)"
exit $status
