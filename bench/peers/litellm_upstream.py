"""LiteLLM's router against the provider of tests/tests/upstream.rs, rebuilt here in Python:
the peer's figures for the README's upstream tables, in the same session as ours.

    python3 -m venv /tmp/llm && /tmp/llm/bin/pip install 'litellm==1.110.*'
    /tmp/llm/bin/python bench/peers/litellm_upstream.py

The provider: one key limited to 10 requests a second (a token bucket), refusing with `429`
and `Retry-After: 1`; or down 3 s (`503`, no hint). 60 calls arrive at 20 a second. It counts
requests, refusals, requests that arrived inside a pause it had announced (more than 20 ms
after it announced it: the ones before were in flight), and requests during the outage.
"""

import asyncio
import json
import time

import litellm
from litellm import Router

IN_FLIGHT = 0.020


class Provider:
    def __init__(self, mode):
        self.mode = mode
        self.start = time.monotonic()
        self.tokens = 10.0
        self.filled = self.start
        self.announced = None
        self.seen = dict(requests=0, refused=0, inside_pause=0, during_outage=0)

    def answer(self):
        now = time.monotonic()
        self.seen["requests"] += 1
        if self.announced and self.announced[0] + IN_FLIGHT < now < self.announced[1]:
            self.seen["inside_pause"] += 1
        if self.mode == "outage" and now - self.start < 3.0:
            self.seen["during_outage"] += 1
            return 503, {}, b'{"error":{"message":"down","type":"server_error"}}'
        # The outage's provider has no limit of its own once it is back.
        rate = 10.0 if self.mode == "limit" else 1000.0
        self.tokens = min(rate, self.tokens + (now - self.filled) * rate)
        self.filled = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            body = {
                "id": "c", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
            return 200, {}, json.dumps(body).encode()
        self.seen["refused"] += 1
        end = now + 1.0
        if self.announced is None or self.announced[1] < end:
            self.announced = (now, end)
        return 429, {"retry-after": "1"}, b'{"error":{"message":"slow down","type":"rate_limit_exceeded"}}'

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
                status, headers, body = self.answer()
                reason = {200: "OK", 429: "Too Many Requests", 503: "Service Unavailable"}[status]
                lines = [f"HTTP/1.1 {status} {reason}", "content-type: application/json", f"content-length: {len(body)}"]
                lines += [f"{k}: {v}" for k, v in headers.items()]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError):
            pass
        finally:
            writer.close()


async def run(mode, retries):
    provider = Provider(mode)
    server = await asyncio.start_server(provider.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    router = Router(
        model_list=[{
            "model_name": "m",
            "litellm_params": {"model": "openai/m", "api_base": f"http://127.0.0.1:{port}/v1", "api_key": "k"},
        }],
        num_retries=retries,
    )
    provider.start = time.monotonic()
    durations, failed = [], 0

    async def call(n):
        nonlocal failed
        await asyncio.sleep(n * 0.05)
        began = time.monotonic()
        try:
            await router.acompletion(model="m", messages=[{"role": "user", "content": "hi"}])
        except Exception:
            failed += 1
        durations.append(time.monotonic() - began)

    await asyncio.gather(*(call(n) for n in range(60)))
    server.close()
    mean = sum(durations) / len(durations)
    return dict(mode=mode, retries=retries, failed=failed, mean_call_s=round(mean, 2), **provider.seen)


async def main():
    litellm.suppress_debug_info = True
    print(await run("limit", 3), flush=True)
    print(await run("outage", 4), flush=True)


asyncio.run(main())
