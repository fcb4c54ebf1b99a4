# syntax=docker/dockerfile:1
#
# pyscheduler's image: `docker build -t pyscheduler:dev .` (needs BuildKit: the default builder since Docker 23).
#
#   stage "build": builds pyscheduler's wheel and a wheel for every dependency into /wheels.
#   final stage:   installs those wheels (no index, no compiler, no source tree), removes pip/setuptools/wheel,
#                  and runs as the unprivileged user 65532.
#
# ENTRYPOINT is `pyscheduler`, CMD `run`: `docker run pyscheduler:dev run --kubeconfig ...`. In a pod it uses
# the in-cluster ServiceAccount; see manifests/deployment.yaml.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# .dockerignore lets in only what the wheel is built from (pyscheduler/, setup.cfg, pyproject.toml, README.md).
COPY . .
# Out-of-tree plugins baked into the image: pip requirement specifiers of packages that declare a
# `pyscheduler.plugins` entry point, e.g. --build-arg PLUGINS="pyscheduler-label-match==0.1.0 my-plugins>=2".
ARG PLUGINS=""
RUN pip wheel --wheel-dir /wheels . ${PLUGINS} \
 && ls -l /wheels

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="pyscheduler" \
      org.opencontainers.image.description="A Kubernetes scheduler in Python (schedulerName: py-scheduler)" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/home/nonroot
# The wheels are bind-mounted from the build stage, so they never become a layer of this image. pip compiles
# the .pyc files at install time (the root filesystem is read-only at run time).
ARG PLUGINS=""
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels pyscheduler ${PLUGINS} \
 && pip uninstall -y setuptools wheel pip \
 && groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --home-dir /home/nonroot --create-home \
      --shell /usr/sbin/nologin nonroot \
 && pyscheduler plugins >/dev/null
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 10259
ENTRYPOINT ["pyscheduler"]
CMD ["run"]
