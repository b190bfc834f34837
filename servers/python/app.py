"""Reference server for volley: FastAPI on uvicorn, production defaults.

Start: .venv/bin/uvicorn app:app --host 127.0.0.1 --port $PORT --no-access-log
HTTPS: add --ssl-certfile "$TLS_CERT" --ssl-keyfile "$TLS_KEY" (uvicorn terminates TLS).
"""

import asyncio

from fastapi import FastAPI, Query, Request
from fastapi.responses import PlainTextResponse

# Caps /bytes?n= (1 GiB): a larger body is refused rather than allocated.
MAX_BYTES = 1 << 30

# No docs/OpenAPI routes: the server answers the benchmark contract only.
app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)


@app.get("/", response_class=PlainTextResponse)
async def root() -> str:
    return "."


@app.post("/", response_class=PlainTextResponse)
async def post_root(request: Request) -> str:
    length = 0
    async for chunk in request.stream():
        length += len(chunk)
    return f"length:{length}"


@app.get("/hello", response_class=PlainTextResponse)
async def hello() -> str:
    return "Hello, World!"


@app.get("/delay", response_class=PlainTextResponse)
async def delay(ms: int = Query(ge=0)) -> str:
    # asyncio.sleep yields to the event loop: other requests go on meanwhile.
    await asyncio.sleep(ms / 1000)
    return "."


@app.get("/bytes", response_class=PlainTextResponse)
async def bytes_(n: int = Query(ge=0, le=MAX_BYTES)) -> str:
    return "x" * n
