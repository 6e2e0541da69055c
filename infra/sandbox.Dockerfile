# The image of local sandbox containers (SANDBOX_LOCAL_RUNTIME=docker, docs/sandbox.md):
# bash and coreutils (Debian), node, python3 with matplotlib for figures.
#   docker build -f infra/sandbox.Dockerfile -t agent-backend-sandbox infra
FROM node:24-bookworm-slim
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 python3-matplotlib fonts-dejavu-core \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /workspace
