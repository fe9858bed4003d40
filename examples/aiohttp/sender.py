"""An aiohttp sender of GeoJSON webhooks, as a provider writes one.

It posts -events Features, each under its own Idempotency-Key, over one
aiohttp connection pool of -pool connections (TCPConnector(limit=...)),
all events at once, and retries each as the usual sender does: a status
of 429 or 5xx and a connection error are retried after a decorrelated
jitter delay (or the answer's Retry-After), any other 4xx is final. Each
event is sent -times times in all (the at-least-once delivery's
duplicates), one after the other.

It prints one JSON line: how many events ended 2xx, how many failed for
good, the statuses of the final answers, and the transport errors met on
the way (connection refused or reset), which a receiver with room should
never cause.

    /usr/bin/python3 sender.py --url http://127.0.0.1:8080/features --events 200 --pool 16
"""

import argparse
import asyncio
import json
import random

import aiohttp

RETRYABLE = frozenset({429, 500, 502, 503, 504})


async def deliver(session, url, i, attempts, tally):
    feature = {
        "type": "Feature",
        "id": f"aio-{i}",
        "geometry": {"type": "Point", "coordinates": [13.4 + i / 1e4, 52.5]},
        "properties": {"n": i},
    }
    headers = {"Content-Type": "application/geo+json", "Idempotency-Key": f'"aio-evt-{i}"'}
    prev = 0.05
    for attempt in range(attempts):
        delay = None
        try:
            async with session.post(url, json=feature, headers=headers) as resp:
                await resp.read()
                if resp.status < 400:
                    tally["final"][str(resp.status)] = tally["final"].get(str(resp.status), 0) + 1
                    return True
                if resp.status not in RETRYABLE:
                    tally["final"][str(resp.status)] = tally["final"].get(str(resp.status), 0) + 1
                    return False
                tally["retried"][str(resp.status)] = tally["retried"].get(str(resp.status), 0) + 1
                ra = resp.headers.get("Retry-After")
                if ra is not None:
                    try:
                        delay = max(0.0, float(ra))
                    except ValueError:
                        delay = None
        except (aiohttp.ClientConnectionError, asyncio.TimeoutError) as exc:
            tally["transport_errors"] += 1
            tally["errors"].append(type(exc).__name__)
        if delay is None:
            prev = min(2.0, random.uniform(0.05, prev * 3))
            delay = prev
        await asyncio.sleep(min(delay, 5.0))
    tally["final"]["exhausted"] = tally["final"].get("exhausted", 0) + 1
    return False


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--events", type=int, default=200)
    p.add_argument("--pool", type=int, default=16)
    p.add_argument("--times", type=int, default=1)
    p.add_argument("--attempts", type=int, default=6)
    a = p.parse_args()
    tally = {"final": {}, "retried": {}, "transport_errors": 0, "errors": []}
    delivered = 0
    connector = aiohttp.TCPConnector(limit=a.pool)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:
        for _ in range(a.times):
            done = await asyncio.gather(*(deliver(session, a.url, i, a.attempts, tally) for i in range(a.events)))
            delivered += sum(1 for ok in done if ok)
    tally["errors"] = sorted(set(tally["errors"]))
    print(json.dumps({"delivered": delivered, **tally}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
