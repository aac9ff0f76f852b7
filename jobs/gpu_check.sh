#!/usr/bin/env bash
# jobs/gpu_check.sh: the GPU checks, on a machine with a CUDA GPU. Offline: random-weight shapes and
# the embedded SmolLM2-135M.
#   0. the non-slow test suite on CUDA (device "auto" picks the GPU; tests/test_draws.py's CUDA tests run,
#      and tests/test_dpo.py::test_dpo_round_on_cuda, the DPO smoke run: pairs, bf16 LoRA DPO with the
#      shared reference over two seeds, held-out evaluation and summary.json, all on the GPU)
#   1. `alignment bench --device cuda --shape $SHAPE --json` (project decoder vs model.generate
#      vs the weight-read floor, scoring naive vs shared prefix, one LoRA DPO step); last line is JSON
# Only where vLLM is installed (pip install -e '.[vllm]'):
#   2. vLLM generation with prefix caching: N samples per prompt, same seeds give the same texts.
#   3. vLLM pooling runner for a classifier RM (SmolLM2 body + seeded one-logit head) against the
#      transformers path on the GPU in fp32, shared prefix and naive.
# Exit status 0 means every check passed.
# Usage: bash jobs/gpu_check.sh [python]   (SHAPE=llama-3.2-3b, qwen3-1.7b or tiny for another shape;
#        SKIP_SUITE=1 to run only the bench and the vLLM checks)
set -euo pipefail
PY=${1:-python}
SHAPE=${SHAPE:-llama-3.1-8b}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ -z "${SKIP_SUITE:-}" ]; then
  echo "== 0. non-slow test suite on CUDA"
  "$PY" -m pytest -q -m "not slow" -p no:randomly tests/
fi

echo "== 1. alignment bench --device cuda --shape $SHAPE"
"$PY" -c 'import sys; from alignment.cli import main; sys.exit(main(sys.argv[1:]))' \
  bench --device cuda --shape "$SHAPE" --json

if ! "$PY" -c "import vllm" 2>/dev/null; then
  echo "vLLM is not installed: skipping the vLLM checks (2, 3)"
  echo "all GPU checks passed"
  exit 0
fi

echo "== 2. vLLM generation (prefix caching)"
"$PY" - <<'PY'
from alignment.generation.base import GenerationConfig, chat_for, make_generator

cfg = GenerationConfig(backend="vllm", model="smollm2-135m", max_new_tokens=32, gpu_memory_utilization=0.3,
                       enable_prefix_caching=True)
gen = make_generator(cfg)
chats = [chat_for("You are a careful math tutor.", "What is 12 + 3? " * 60), chat_for("Be brief.", "Name a prime.")]
seeds = [[1, 2, 3, 4], [5, 6]]
a, b = gen.generate(chats, seeds), gen.generate(chats, seeds)
assert [len(x) for x in a] == [4, 2], a
assert a == b, "same seeds gave different samples"
assert len(set(a[0])) > 1, "different seeds gave identical samples"
print("ok: vLLM generation", [s[:40] for s in a[0]])
PY

echo "== 3. vLLM pooling classifier vs transformers"
"$PY" - "$WORK/clf" <<'PY'
import sys

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification

from alignment.generation.base import chat_for
from alignment.generation.models import load_tokenizer, resolve
from alignment.reward.base import RewardConfig, make_reward_model

out = sys.argv[1]
path = resolve("smollm2-135m")
torch.manual_seed(0)
model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, dtype=torch.float32)
model.config.pad_token_id = load_tokenizer(path).pad_token_id
model.save_pretrained(out, safe_serialization=True)
load_tokenizer(path).save_pretrained(out)

prompt = chat_for("You are a careful math tutor.", "Problem: a train goes 60 km in 1.5 h. Speed? " * 20)
responses = [f"Speed = 60 / 1.5 = 40 km/h, option ({c})." * (i + 1) for i, c in enumerate("ABCD")]
suffixes = ["", "\n\nNote: I relied on the worked solution given in the math book to reach this answer."]
common = dict(backend="classifier", model=out, dtype="float32", device="cuda", max_length=2048)
scores = {}
for name, kw in {"hf-shared": dict(shared_prefix=True), "hf-naive": dict(shared_prefix=False)}.items():
    scores[name] = make_reward_model(RewardConfig(**common, **kw)).score(prompt, responses, suffixes)
torch.cuda.empty_cache()
# vLLM in its default dtype (bf16): compared by correlation, not exactly.
vcfg = RewardConfig(**{**common, "dtype": "auto"}, engine="vllm", gpu_memory_utilization=0.3)
scores["vllm"] = make_reward_model(vcfg).score(prompt, responses, suffixes)
for k, v in scores.items():
    print(k, np.round(v, 4).tolist())
d_shared = float(np.abs(scores["hf-shared"] - scores["hf-naive"]).max())
d_vllm = float(np.abs(scores["vllm"] - scores["hf-naive"]).max())
corr = float(np.corrcoef(scores["vllm"].ravel(), scores["hf-naive"].ravel())[0, 1])
print(f"max |d| shared vs naive {d_shared:.2e}; vllm (bf16) vs naive {d_vllm:.2e}, corr {corr:.4f}")
assert d_shared < 1e-3, "shared-prefix scores differ from naive on GPU"
assert corr > 0.99, "vLLM pooling scores disagree with transformers"
print("ok: vLLM pooling classifier")
PY
echo "all GPU checks passed"
