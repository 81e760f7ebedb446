"""LiteLLM's router against the providers of `bench/examples/fallback.rs`, rebuilt here in
Python: the peer's figures for the README's fallback table, in the same session as ours.

    python3 -m venv /tmp/llm && /tmp/llm/bin/pip install 'litellm==1.110.*'
    /tmp/llm/bin/python bench/peers/litellm_fallback.py

Two OpenAI-style providers on loopback: the primary down 5 s from the start (`503`, no hint),
the secondary healthy, answering in 20 ms. 60 calls arrive at 20 a second. Each provider
counts its requests; the primary also counts those during its outage.

Three LiteLLM set-ups: two model groups with `fallbacks` (retries 3); one group holding both
deployments, `order` 1 and 2, with its cooldowns (its best in one process); the same with
retries 0.
"""

import asyncio
import json
import time

import litellm
from litellm import Router

OUTAGE = 5.0
LATENCY = 0.020


class Provider:
    def __init__(self, down_for):
        self.down_for = down_for
        self.start = time.monotonic()
        self.seen = dict(requests=0, during_outage=0)

    async def answer(self):
        now = time.monotonic()
        self.seen["requests"] += 1
        if now - self.start < self.down_for:
            self.seen["during_outage"] += 1
            return 503, b'{"error":{"message":"down","type":"server_error"}}'
        await asyncio.sleep(LATENCY)
        body = {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return 200, json.dumps(body).encode()

    async def serve(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if length:
                    await reader.readexactly(length)
                status, body = await self.answer()
                reason = {200: "OK", 503: "Service Unavailable"}[status]
                lines = [f"HTTP/1.1 {status} {reason}", "content-type: application/json", f"content-length: {len(body)}"]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError):
            pass
        finally:
            writer.close()


def deployment(name, port, order=None):
    params = {"model": "openai/m", "api_base": f"http://127.0.0.1:{port}/v1", "api_key": "k"}
    if order is not None:
        params["order"] = order
    return {"model_name": name, "litellm_params": params}


async def run(setup):
    primary, secondary = Provider(OUTAGE), Provider(0.0)
    servers = [await asyncio.start_server(p.serve, "127.0.0.1", 0) for p in (primary, secondary)]
    ports = [s.sockets[0].getsockname()[1] for s in servers]
    if setup == "fallbacks":
        router = Router(
            model_list=[deployment("primary", ports[0]), deployment("secondary", ports[1])],
            fallbacks=[{"primary": ["secondary"]}],
            num_retries=3,
        )
        model = "primary"
    else:
        router = Router(
            model_list=[deployment("m", ports[0], 1), deployment("m", ports[1], 2)],
            num_retries=3 if setup == "group" else 0,
        )
        model = "m"
    primary.start = secondary.start = time.monotonic()
    durations, failed = [], 0

    async def call(n):
        nonlocal failed
        await asyncio.sleep(n * 0.05)
        began = time.monotonic()
        try:
            await router.acompletion(model=model, messages=[{"role": "user", "content": "hi"}])
        except Exception:
            failed += 1
        durations.append(time.monotonic() - began)

    await asyncio.gather(*(call(n) for n in range(60)))
    for server in servers:
        server.close()
    return dict(
        setup=setup,
        primary=primary.seen["requests"],
        primary_during_outage=primary.seen["during_outage"],
        secondary=secondary.seen["requests"],
        mean_call_s=round(sum(durations) / len(durations), 3),
        max_call_s=round(max(durations), 3),
        failed=failed,
    )


async def main():
    litellm.suppress_debug_info = True
    for setup in ("fallbacks", "group", "group-no-retries"):
        print(await run(setup), flush=True)


asyncio.run(main())
