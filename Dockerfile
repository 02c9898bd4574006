# The plan ledger HTTP server. Build and run with docker compose (see docker-compose.yml).
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY domain ./domain
COPY projections ./projections
COPY planledger ./planledger
RUN pip install --no-cache-dir . \
    && useradd --system --home-dir /data planledger \
    && mkdir -p /data && chown planledger /data

USER planledger
ENV PLANLEDGER_HOME=/data
EXPOSE 8765
HEALTHCHECK --interval=5s --timeout=3s --retries=10 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/healthz', timeout=2)"]
# Inside the container the server must listen on all interfaces; compose publishes the port
# on the host's loopback only.
CMD ["planledger", "serve", "--host", "0.0.0.0", "--port", "8765"]
