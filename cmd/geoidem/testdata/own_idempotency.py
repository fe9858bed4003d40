#!/usr/bin/env python3
"""An aiohttp receiver with idempotency of its own, written as a team in
Python would: keys read bare, its own plain JSON errors. geoidem contract
must pass it (run with -no-validator: it validates no geometry)."""

import asyncio
import hashlib
import json
import sys

from aiohttp import web

records = {}  # key -> {"fp", "status", "body"}, or {"fp", "running": True}


def refuse(status, message):
    return web.json_response({"error": message}, status=status)


async def post_features(request):
    fields = request.headers.getall("Idempotency-Key", [])
    if not fields:
        return refuse(400, "Idempotency-Key required")
    key = fields[0].strip(" \t")
    if len(fields) > 1 or not key or len(key) > 255 or any(not 0x20 <= ord(c) <= 0x7E for c in key):
        return refuse(400, "Idempotency-Key malformed")
    body = await request.read()
    fp = hashlib.sha256(body).hexdigest()
    rec = records.get(key)
    if rec is not None:
        if rec["fp"] != fp:
            return refuse(422, "Idempotency-Key reused with another payload")
        if rec.get("running"):
            return web.json_response({"error": "in flight"}, status=409, headers={"Retry-After": "1"})
        return web.Response(status=rec["status"], body=rec["body"], content_type="application/json",
                            headers={"Idempotent-Replayed": "true"})
    records[key] = {"fp": fp, "running": True}
    try:
        doc = json.loads(body)
    except ValueError:
        del records[key]
        return refuse(400, "not JSON")
    await asyncio.sleep(0.01)  # the work
    answer = json.dumps({"stored": [str(doc.get("id"))]}).encode()
    records[key] = {"fp": fp, "status": 201, "body": answer}
    resp = web.Response(status=201, body=answer, content_type="application/json")
    resp.set_cookie("session", "s1")
    return resp


async def serve():
    app = web.Application()
    app.router.add_post("/features", post_features)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = site._server.sockets[0].getsockname()[:2]
    print(f"receiver: serving http://{host}:{port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        sys.exit(0)
