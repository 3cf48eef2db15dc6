#!/usr/bin/env bash
# The capture layer on the GPU machine, in one call (docs/GPU.md "Capture"):
# the CUDA corpus under `streamcheck capture`, the PyTorch corpus recorded and
# next to CSAN, the capture's overhead on a 100k-launch program, a >= 1M-call
# trace checked on one core, and the PyTorch recorder's cost per iteration
# against CSAN's.   gpu_capture_run.sh CARRY_DIR OUT_DIR [torch]
# CARRY_DIR holds streamcheck, libstreamcheck_capture.so, corpus/ (the nvcc
# builds of tests/capture/*.cu) and lib/ (libfmt). With "torch", only the
# PyTorch parts run (then CARRY_DIR needs only streamcheck and lib/).
set -u
carry=$(cd "$1" && pwd) top=$2
out=$top/work  # the details, archived into $top/runs.tgz at the end (the device hands back few files)
mkdir -p "$out"
export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sc=$carry/streamcheck lib=$carry/libstreamcheck_capture.so only=${3:-all}
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} >"$out/machine.txt" 2>&1

if [[ $only != torch ]]; then
echo "== CUDA corpus" | tee "$out/corpus.txt"
bash tests/capture/run_corpus.sh "$sc" "$carry/corpus" tests/capture/expected.txt "$out/corpus" 2>&1 | tee -a "$out/corpus.txt"

fi
echo "== PyTorch corpus (streamcheck_torch and CSAN)" | tee "$out/torch.txt"
bash tests/capture/torch/run_torch_corpus.sh "$sc" "$out/torch" 2>&1 | tee -a "$out/torch.txt"

calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
wall() { local s e; s=$EPOCHREALTIME; "$@" >/dev/null 2>&1; e=$EPOCHREALTIME; calc "$e - $s"; }
# Interleaved runs, so that a noisy neighbour hits every variant alike.
if [[ $only != torch ]]; then
capture_env=(env CUDA_INJECTION64_PATH="$lib" STREAMCHECK_CAPTURE_OUT="$out/many100k.trace")
for elements in 1024 1048576; do
  echo "== capture overhead, many_launches 50000 $elements (100k launches, 300k API calls), wall seconds" | tee -a "$out/overhead.txt"
  for k in 1 2 3 4 5; do
    b=$(wall "$carry/corpus/many_launches" 50000 $elements)
    c=$(wall "${capture_env[@]}" "$carry/corpus/many_launches" 50000 $elements)
    d=$(wall "${capture_env[@]}" STREAMCHECK_CAPTURE_DRIVER=0 "$carry/corpus/many_launches" 50000 $elements)
    o=$(wall "${capture_env[@]}" STREAMCHECK_CAPTURE_CALLBACKS_ONLY=1 "$carry/corpus/many_launches" 50000 $elements)
    echo "run $k: bare $b captured $c ratio $(calc "$c / $b") | driver unwatched $d ratio $(calc "$d / $b") | CUPTI callbacks alone $o ratio $(calc "$o / $b")" | tee -a "$out/overhead.txt"
  done
done
echo "== >= 1M API calls: many_launches 170000 captured, then checked on one core" | tee "$out/scale.txt"
c=$(wall env CUDA_INJECTION64_PATH="$lib" STREAMCHECK_CAPTURE_OUT="$out/many1m.trace" "$carry/corpus/many_launches" 170000)
echo "captured in $c s: $(grep -c . "$out/many1m.trace") lines" | tee -a "$out/scale.txt"
s=$EPOCHREALTIME; taskset -c 0 "$sc" check "$out/many1m.trace" >"$out/many1m.report" 2>&1; rc=$?; e=$EPOCHREALTIME
echo "streamcheck check (taskset -c 0): rc=$rc in $(calc "$e - $s") s" | tee -a "$out/scale.txt"
tail -3 "$out/many1m.report" | tee -a "$out/scale.txt"
rm -f "$out/many1m.trace" "$out/many100k.trace"
fi

echo "== PyTorch recorder vs CSAN, wait + kernel + record per iteration, one process each run" | tee "$out/torch_bench.txt"
for k in 1 2 3; do
  python3 bench/torch_overhead.py 5000 7 "$out/torch_bench.trace" "$sc" 2>&1 | tail -16 | tee -a "$out/torch_bench.txt"
done
python3 bench/torch_breakdown.py 3000 5 2>&1 | head -16 | tee -a "$out/torch_bench.txt"
s=$EPOCHREALTIME; taskset -c 0 "$sc" check "$out/torch_bench.trace" >"$out/torch_bench.report" 2>&1; rc=$?; e=$EPOCHREALTIME
echo "streamcheck check of the 5000-iteration trace (taskset -c 0): rc=$rc in $(calc "$e - $s") s, $(grep -c . "$out/torch_bench.trace") lines" | tee -a "$out/torch_bench.txt"
rm -f "$out/torch_bench.trace"*
if [[ $only != torch ]]; then
echo "== no GPU visible: CUDA_VISIBLE_DEVICES= streamcheck capture" | tee "$out/nogpu.txt"
CUDA_VISIBLE_DEVICES= "$sc" capture -- "$carry/corpus/pipeline_ok" >>"$out/nogpu.txt" 2>&1
echo "exit $?" | tee -a "$out/nogpu.txt"
fi
# The traces and reports, in one archive (the device returns few files).
tar czf "$top/runs.tgz" -C "$out" . && rm -rf "$out"
