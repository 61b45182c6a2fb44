# Attention Lab: one replica of the app (CPU only).
#   docker build -t attention-lab .
#   docker run --rm -p 8501:8501 attention-lab          → http://localhost:8501
# Several replicas behind nginx with session affinity: deploy/compose.yaml; Kubernetes: deploy/k8s/.
FROM python:3.11-slim

# requirements.txt pins torch==2.13.0. On the project's machines that is a local CPU wheel; elsewhere
# PyPI's torch for Linux is the CUDA build (GBs of nvidia wheels). On machines without the project's
# local wheel, CPU wheels come from PyTorch's CPU index — pass it as a build argument:
#   docker build --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu -t attention-lab .
# (empty, the default: torch comes from the package index pip is configured with, like everything else)
ARG TORCH_INDEX_URL=""

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # no browser to open, no file watcher: the code in an image does not change
    STREAMLIT_SERVER_HEADLESS=true \
    STREAMLIT_SERVER_FILE_WATCHER_TYPE=none \
    # two malloc arenas, not one per thread: a class's session threads otherwise keep 200-400 MB more
    MALLOC_ARENA_MAX=2

WORKDIR /app
COPY requirements.txt ./
# torch first from the CPU index when one is given (the version is the one pinned in requirements.txt),
# then the rest; "2.13.0+cpu" satisfies the pin "torch==2.13.0"
RUN if [ -n "$TORCH_INDEX_URL" ]; then \
        pip install "$(grep -E '^torch==' requirements.txt)" --index-url "$TORCH_INDEX_URL"; \
    fi \
 && pip install -r requirements.txt

# the app's files stay owned by root: the app only reads them
COPY . .
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin app
USER app

EXPOSE 8501
# python rather than curl: the slim image has no curl
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=4).read().strip() != b'ok')"

CMD ["streamlit", "run", "app.py", "--server.port", "8501", "--server.address", "0.0.0.0", "--browser.gatherUsageStats", "false"]
