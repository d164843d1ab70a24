#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The test's program for slurm/*.sbatch (installed as skein-slurm-probe): one line per rank with
# what the launcher and Slurm gave it, then, with --ranks, skein-info --ranks (whose rank 0 prints
# Skein's placement). Under srun the rank is PMIx's and the local rank Slurm's; under mpirun the
# Slurm variables describe mpirun's daemon, so Open MPI's own come first.
rank="${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-unknown}}"
local_rank="${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-unknown}}"
echo "slurm-probe rank=${rank} local=${local_rank} host=$(hostname)" \
     "cuda_visible_devices=${CUDA_VISIBLE_DEVICES-unset} skein_device=${SKEIN_DEVICE-unset}" \
     "skein_devices_per_rank=${SKEIN_DEVICES_PER_RANK-unset}"
if [[ "${1:-}" == --ranks ]]; then exec skein-info --ranks; fi
