"""LiteLLM's router against the provider of tests/src/provider.rs, rebuilt here in Python: the
peer's figures for BENCHMARKS.md's pacing tables, in the same session as ours.

    pip install 'litellm==1.110.*'
    python3 bench/peers/litellm_pacing.py

The provider: one key of 10 requests a second with a burst of 10 (a token bucket), or of
4,500 tokens a second (each request costs its `max_tokens`), refusing with `429` and
`Retry-After: 1`, and saying its limits in OpenAI's headers on every answer
(`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`). 120 calls arrive at 20 a second.
It counts requests, refusals, and what it served; throughput is what it served past its
starting burst over what it could have served from the first request to the last.
"""

import asyncio
import json
import time

import litellm
from litellm import Router


class Bucket:
    def __init__(self, rate, size):
        self.rate, self.size, self.level = rate, size, size

    def refill(self, elapsed):
        self.level = min(self.size, self.level + elapsed * self.rate)

    def to_full(self):
        return max(0.0, (self.size - self.level) / self.rate)


def go_duration(seconds):
    return f"{int(seconds * 1000)}ms" if seconds < 1 else f"{seconds:.3f}s"


class Provider:
    def __init__(self, tokens):
        self.requests = Bucket(1000.0 if tokens else 10.0, 1000.0 if tokens else 10.0)
        self.tokens = Bucket(4500.0, 4500.0) if tokens else None
        self.filled = time.monotonic()
        self.seen = dict(requests=0, refused=0, served=0, tokens_served=0, first=None, last=None)

    def answer(self, body):
        now = time.monotonic()
        try:
            cost = json.loads(body or b"{}").get("max_tokens") or 0
        except ValueError:
            cost = 0
        elapsed, self.filled = now - self.filled, now
        self.requests.refill(elapsed)
        if self.tokens:
            self.tokens.refill(elapsed)
        fits = self.requests.level >= 1 and (not self.tokens or self.tokens.level >= cost)
        if fits:
            self.requests.level -= 1
            if self.tokens:
                self.tokens.level -= cost
        seen = self.seen
        seen["first"] = seen["first"] or now
        seen["last"] = now
        seen["requests"] += 1
        headers = {}
        for kind, bucket in (("requests", self.requests), ("tokens", self.tokens)):
            if bucket:
                headers[f"x-ratelimit-limit-{kind}"] = str(int(bucket.size))
                headers[f"x-ratelimit-remaining-{kind}"] = str(int(max(0, bucket.level)))
                headers[f"x-ratelimit-reset-{kind}"] = go_duration(bucket.to_full())
        if fits:
            seen["served"] += 1
            seen["tokens_served"] += cost
            body = {
                "id": "c", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
            return 200, headers, json.dumps(body).encode()
        seen["refused"] += 1
        headers["retry-after"] = "1"
        return 429, headers, b'{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}'

    async def serve(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length) if length else b""
                status, headers, body = self.answer(body)
                reason = {200: "OK", 429: "Too Many Requests"}[status]
                lines = [f"HTTP/1.1 {status} {reason}", "content-type: application/json", f"content-length: {len(body)}"]
                lines += [f"{k}: {v}" for k, v in headers.items()]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError):
            pass
        finally:
            writer.close()


async def run(tokens, limits):
    provider = Provider(tokens)
    server = await asyncio.start_server(provider.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    params = {"model": "openai/m", "api_base": f"http://127.0.0.1:{port}/v1", "api_key": "k"}
    deployment = {"model_name": "m", "litellm_params": params}
    if limits:
        # The key's limits as LiteLLM takes them: per minute.
        if tokens:
            deployment["tpm"] = 4500 * 60
        else:
            deployment["rpm"] = 10 * 60
    router = Router(
        model_list=[deployment],
        num_retries=3,
        routing_strategy="usage-based-routing-v2" if limits else "simple-shuffle",
    )
    failed = 0

    async def call(n):
        nonlocal failed
        await asyncio.sleep(n * 0.05)
        max_tokens = 100 + (n * 233) % 701 if tokens else 1
        try:
            await router.acompletion(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=max_tokens)
        except Exception:
            failed += 1

    await asyncio.gather(*(call(n) for n in range(120)))
    server.close()
    seen = provider.seen
    span = (seen["last"] or 0) - (seen["first"] or 0)
    if tokens:
        throughput = (seen["tokens_served"] - 4500) / (4500 * span)
    else:
        throughput = (seen["served"] - 10) / (10 * span)
    return dict(tokens=tokens, limits=limits, requests=seen["requests"], refused=seen["refused"],
                throughput=round(throughput, 2), failed=failed)


async def main():
    litellm.suppress_debug_info = True
    for tokens in (False, True):
        for limits in (False, True):
            print(await run(tokens, limits), flush=True)


asyncio.run(main())
