# syntax=docker/dockerfile:1
# pt2scope images (docs/deploy.md). Three targets, one Python runtime base:
#   docker build --target web        -t pt2scope-web .         gunicorn; no torch, no compiler
#   docker build --target worker     -t pt2scope-worker .      Celery worker, CPU torch and torchvision, g++, bubblewrap
#   docker build --target worker-gpu -t pt2scope-worker-gpu .  the same on a CUDA torch (Triton comes with it)
# Requirements and entry commands are the ones `make run` uses; tests/deploy/ checks that they stay the same and
# runs them outside Docker.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# Front-end assets: the same npm commands as the Makefile's `assets` target, from the lockfile.
FROM node:20-bookworm-slim AS assets
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY static/ static/
RUN npm run --silent build

FROM ${PYTHON_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PT2SCOPE_INSTANCE=/var/lib/pt2scope
# Never root at run time: jobs run other people's code. The code stays root's (read-only to the service); the
# instance folder, the only writable one, holds each job's working folder.
RUN groupadd --gid 10001 pt2scope \
    && useradd --create-home --uid 10001 --gid 10001 pt2scope \
    && install -d -o pt2scope -g pt2scope /var/lib/pt2scope
WORKDIR /app
COPY requirements/web.txt requirements/contract.txt requirements/
RUN pip install -r requirements/web.txt -r requirements/contract.txt

# The web tier: pages and API over the database, sending jobs to the broker. It must run without PyTorch.
FROM base AS web
COPY . .
COPY --from=assets /src/static/vendor static/vendor
USER 10001:10001
ENV PORT=8000
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=10s --start-period=20s --retries=3 CMD ["python", "-m", "service", "health", "web"]
CMD ["python", "-m", "service", "web", "--host", "0.0.0.0"]

# What both workers need from the system: g++ for Inductor's C++ kernels and for Triton's launcher stubs,
# bubblewrap for the job sandbox (PT2SCOPE_ISOLATION; see docs/deploy.md for the container settings it needs).
FROM base AS worker-base
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ bubblewrap \
    && rm -rf /var/lib/apt/lists/*

# torch and torchvision first, the matching pair of requirements/torch.txt from the PyTorch index of the wanted build
# (CPU or one CUDA version); then the engine's other requirements (transformers among them), which find that pair
# installed. (From PyPI alone, torch on Linux x86-64 is a CUDA build of several GB, even for the CPU worker, and
# PyPI's torchvision links against it: docs/deploy.md, "Which torch build".)
FROM worker-base AS worker
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
COPY requirements/torch.txt requirements/engine.txt requirements/
RUN pip install --index-url "$TORCH_INDEX" -r requirements/torch.txt \
    && pip install -r requirements/engine.txt
COPY . .
USER 10001:10001
HEALTHCHECK --interval=30s --timeout=20s --start-period=120s --retries=3 CMD ["python", "-m", "service", "health", "worker"]
CMD ["python", "-m", "service", "worker", "--queues", "cpu"]

# cu130 needs an NVIDIA driver >= 580 on the host; pass --build-arg TORCH_INDEX=.../cu128 (or another CUDA
# version the pinned torch is published for) for older drivers. The wheels carry the CUDA runtime and Triton.
FROM worker-base AS worker-gpu
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu130
COPY requirements/torch.txt requirements/engine.txt requirements/
RUN pip install --index-url "$TORCH_INDEX" -r requirements/torch.txt \
    && pip install -r requirements/engine.txt
COPY . .
USER 10001:10001
# nvidia-smi's order is the PCI bus's; CUDA's must match it for CUDA_VISIBLE_DEVICES to name the same GPU.
ENV CUDA_DEVICE_ORDER=PCI_BUS_ID
HEALTHCHECK --interval=30s --timeout=20s --start-period=120s --retries=3 CMD ["python", "-m", "service", "health", "worker"]
CMD ["python", "-m", "service", "worker", "--queues", "gpu"]
