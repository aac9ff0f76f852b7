#!/usr/bin/env bash
# jobs/reasonbench_gpu.sh: the GPU presets of the ReasonBench experiments, one after the
# other: Qwen3-1.7B (primary, configs/reasonbench_qwen3-1.7b.yaml) and Qwen3-0.6B (replication,
# configs/reasonbench_qwen3-0.6b.yaml), each with the paper's 5 seeds, LoRA SFT in bf16 on CUDA.
#
# Before any long work it checks, in a few seconds each: a CUDA GPU is visible; both configs resolve
# with 5 seeds; each config's model tokenizer loads (the weights must be in the Hugging Face cache,
# or the hub reachable); a 2-step bf16 LoRA SFT + greedy prediction of the embedded SmolLM2 on the GPU.
# Rerunning resumes: finished stages are skipped and an interrupted SFT run continues from its newest
# checkpoint (runs/<config name>/), so the script can be resubmitted after a preemption as is.
#
# Usage: bash jobs/reasonbench_gpu.sh [python] [runs-root]     (e.g. sbatch --gres=gpu:1 --wrap "...")
# Extra `alignment run` options: ALIGNMENT_RUN_ARGS="--quiet" bash jobs/reasonbench_gpu.sh
set -euo pipefail
PY=${1:-python}
RUNS=${2:-runs}
CONFIGS=(configs/reasonbench_qwen3-1.7b.yaml configs/reasonbench_qwen3-0.6b.yaml)
SETS=(--set 'reasonbench.seeds=[0,1,2,3,4]' --set reasonbench.sft.dtype=bfloat16 --set reasonbench.sft.device=cuda)
export TOKENIZERS_PARALLELISM=false
cd "$(dirname "$0")/.."

echo "== preflight: GPU, configs, tokenizers"
"$PY" -c "import torch, sys; ok = torch.cuda.is_available(); print('cuda:', torch.cuda.get_device_name(0) if ok else None); sys.exit(0 if ok and torch.cuda.is_bf16_supported() else 1)"
for cfg in "${CONFIGS[@]}"; do
  "$PY" -m alignment.cli config show "$cfg" "${SETS[@]}" > "/tmp/reasonbench_gpu.$$.yaml"
  "$PY" - "/tmp/reasonbench_gpu.$$.yaml" "$cfg" <<'PY'
import sys

import yaml

from alignment.generation.models import load_tokenizer
from alignment.organism.presets import resolve

rb = yaml.safe_load(open(sys.argv[1]))["reasonbench"]
assert len(rb["seeds"]) == 5, f"{sys.argv[2]}: expected 5 seeds, got {rb['seeds']}"
assert "sft" in rb["learners"], f"{sys.argv[2]}: the sft learner is not listed"
model = rb["sft"].get("model", "smollm2-135m")
tok = load_tokenizer(resolve(model))
print(f"ok: {sys.argv[2]}: {model}, seeds {rb['seeds']}, targets {rb['targets']}, chat template: {bool(tok.chat_template)}")
PY
done
rm -f "/tmp/reasonbench_gpu.$$.yaml"

echo "== preflight: 2-step bf16 LoRA SFT and greedy prediction on the GPU (embedded SmolLM2)"
"$PY" - <<'PY'
import tempfile
from pathlib import Path

from alignment.reasonbench.experiments import sft

cfg = sft.SFTConfig(model="smollm2-135m", dtype="bfloat16", device="cuda", max_steps=2, batch_size=2,
                    save_steps=1, eval_batch_size=4, max_new_tokens=8)
prompts = [f"Case {i}: does rule R{i} apply? Answer approve, deny or refer." for i in range(4)]
with tempfile.TemporaryDirectory() as d:
    stats = sft.train(cfg, prompts, ["approve", "deny", "refer", "deny"], Path(d), seed=0)
    assert stats["dtype"] == "bfloat16" and stats["steps"] == 2, stats
    texts, pstats = sft.predict(cfg, Path(d), prompts)
    assert len(texts) == 4 and pstats["dtype"] == "bfloat16", pstats
print(f"ok: {stats['train_tokens_per_s']:.0f} train tokens/s, {pstats['cases_per_s']:.1f} cases/s (tiny smoke, not a benchmark)")
PY

for cfg in "${CONFIGS[@]}"; do
  name=$(basename "$cfg" .yaml)
  echo "== $name -> $RUNS/$name"
  # shellcheck disable=SC2086  # ALIGNMENT_RUN_ARGS is a list of options
  "$PY" -m alignment.cli run "$cfg" --out "$RUNS/$name" "${SETS[@]}" ${ALIGNMENT_RUN_ARGS:-}
done
echo "all ReasonBench GPU runs finished: ${RUNS}/reasonbench_qwen3-1.7b, ${RUNS}/reasonbench_qwen3-0.6b"
