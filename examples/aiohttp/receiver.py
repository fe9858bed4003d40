#!/usr/bin/env python3
"""A GeoJSON receiver in Python (aiohttp) with no idempotency of its own.

Behind `geoidem proxy -upstream http://127.0.0.1:PORT` it runs each delivery
once: the proxy claims the Idempotency-Key, validates the GeoJSON, forwards
each new key once, and replays the recorded answer to every retry.

    python3 receiver.py [--port 8081] [--runs runs.jsonl] [--dedup]

POST /features   stores a Feature or FeatureCollection by id and answers
                 201 {"stored": [ids]}; each run is appended to --runs (one
                 JSON line: the Idempotency-Key and the ids), the receiver's
                 durable effect
GET  /runs       {"runs": N, "keys": {key: times run}}

--dedup makes the receiver deduplicate its own effects by the forwarded
Idempotency-Key too (the answer of a key already run is answered again,
nothing runs), read back from --runs after a restart: then an uncertain
outcome may be released at once (geoidem proxy -uncertain-hold 0).

For fault injection (examples/chaos): --delay S sleeps before the work;
--die-before P and --die-after P end the process (os._exit) with
probability P before the work, or after it and before the answer.
"""

import argparse
import asyncio
import json
import os
import random
import sys

from aiohttp import web


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8081)
    ap.add_argument("--runs", default="", help="append each run here (JSON lines)")
    ap.add_argument("--dedup", action="store_true", help="deduplicate by Idempotency-Key")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--die-before", type=float, default=0.0)
    ap.add_argument("--die-after", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    rnd = random.Random(args.seed)

    runs = {"n": 0, "keys": {}, "answers": {}}
    log = None
    if args.runs:
        if os.path.exists(args.runs):
            with open(args.runs) as f:
                for line in f:
                    try:
                        run = json.loads(line)
                    except ValueError:
                        continue  # a line cut by a crash
                    runs["n"] += 1
                    runs["keys"][run["key"]] = runs["keys"].get(run["key"], 0) + 1
                    runs["answers"][run["key"]] = run["answer"]
        log = open(args.runs, "a")
    features = {}

    async def post_features(request):
        body = await request.read()
        key = request.headers.get("Idempotency-Key", "")
        if args.dedup and key in runs["answers"]:
            return web.json_response(runs["answers"][key], status=201)
        if args.delay:
            await asyncio.sleep(args.delay)
        if rnd.random() < args.die_before:
            os._exit(3)
        doc = json.loads(body)
        feats = doc.get("features", []) if doc.get("type") == "FeatureCollection" else [doc]
        ids = [str(f.get("id")) for f in feats]
        for f in feats:
            features[str(f.get("id"))] = f
        answer = {"stored": ids}
        runs["n"] += 1
        runs["keys"][key] = runs["keys"].get(key, 0) + 1
        runs["answers"][key] = answer
        if log:
            log.write(json.dumps({"key": key, "ids": ids, "answer": answer}) + "\n")
            log.flush()
            os.fsync(log.fileno())
        if rnd.random() < args.die_after:
            os._exit(3)  # the work is done, the answer lost
        resp = web.json_response(answer, status=201)
        resp.set_cookie("receiver-session", "s1")  # never replayed by the proxy
        return resp

    async def get_runs(request):
        return web.json_response({"runs": runs["n"], "keys": runs["keys"]})

    async def serve():
        app = web.Application(client_max_size=16 << 20)
        app.router.add_post("/features", post_features)
        app.router.add_get("/runs", get_runs)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, args.host, args.port)
        await site.start()
        host, port = site._server.sockets[0].getsockname()[:2]
        print(f"receiver: serving http://{host}:{port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
