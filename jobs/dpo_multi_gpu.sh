#!/usr/bin/env bash
# Multi-GPU LoRA DPO: jobs/dpo_multi_gpu.sh CONFIG RUN_DIR [zero2|zero3] [NUM_GPUS]
# Needs the deepspeed extra (pip install -e '.[deepspeed]') beside accelerate.
#
# Run the cheap stages single-process first (one process must write the pairs):
#   alignment dpo-pairs CONFIG --out RUN_DIR
# then train with one process per GPU (TRL + accelerate + DeepSpeed). Only rank 0 writes
# checkpoints' pruning, the exported adapter and result.json. The command is idempotent:
# rerunning it after a crash or a SLURM preemption resumes every (variant, seed) run from its
# newest checkpoint and skips finished ones. Then evaluate (single process, or vLLM-free GPU):
#   alignment dpo-eval CONFIG --out RUN_DIR
# Under SLURM: sbatch --gres=gpu:8 --wrap "jobs/dpo_multi_gpu.sh configs/paper_dpo_mathbook_llama-3.1-8b.yaml runs/x zero3"
set -euo pipefail
CONFIG=${1:?usage: $0 CONFIG RUN_DIR [zero2|zero3] [NUM_GPUS]}
RUN_DIR=${2:?usage: $0 CONFIG RUN_DIR [zero2|zero3] [NUM_GPUS]}
ZERO=${3:-zero2}
NUM_GPUS=${4:-$(python -c "import torch; print(torch.cuda.device_count())")}
HERE=$(cd "$(dirname "$0")" && pwd)
exec accelerate launch \
  --config_file "$HERE/accelerate_${ZERO}.yaml" \
  --num_processes "$NUM_GPUS" \
  -m alignment.cli dpo-train "$CONFIG" --out "$RUN_DIR" --set dpo.device=cuda
