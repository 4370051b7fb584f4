"""The LangGraph peer of `cargo bench --bench fleet`: one worker process.

The same work as planlock's demo plan, as a LangGraph graph of 12 nodes (one per step type),
with LangGraph's own PostgreSQL checkpointer (`langgraph-checkpoint-postgres`, LangGraph's
defaults) and its PostgreSQL store for memories, decisions, evidence and links, on the same
server; the model calls go to the same mock server over HTTP (httpx). The worker's S/W sessions
are threads (`thread_id`), all driven at once by asyncio, each cycle after cycle.

Protocol (as the Rust workers): environment FLEET_*; prints READY, waits for a line on stdin,
runs for the window, prints `RESULT {json}` and exits. `FLEET_SETUP=1` creates the tables once.
"""

import asyncio
import hashlib
import json
import os
import resource
import sys
import time
from typing import TypedDict

import httpx
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool


class Cycle(TypedDict, total=False):
    question: str
    cycle: int
    version: str
    context: list
    memories: list
    decisions: list
    prompt: str
    response: str
    summary: str
    keywords: list
    memory_id: str
    decision_id: str
    evidence_id: str
    link: str
    status: str


TEMPLATE = "Answer {question} using {context}"


def build(store, http, model_url, policy):
    async def chat(system, user, extra):
        body = {"model": "fleet-mock", "max_tokens": 512, "messages": [
            {"role": "system", "content": system}, {"role": "user", "content": user}], **extra}
        r = await http.post(f"{model_url}/chat/completions", json=body)
        r.raise_for_status()
        return r.json()["choices"][0]["message"]["content"]

    def repo_scan(state):
        names = sorted(os.path.join(d, f) for d, _, fs in os.walk(policy) for f in fs)
        version = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
        return {"version": version, "cycle": state.get("cycle", 0) + 1}

    def context_select(state):
        return {"context": [w for w in state["question"].split() if len(w) > 3][:5]}

    def ns(kind, config):
        return (kind, config["configurable"]["thread_id"])

    async def retrieve_memory(state, config):
        items = await store.asearch(ns("memories", config), limit=5)
        return {"memories": [i.value["summary"] for i in items]}

    async def retrieve_decision_context(state, config):
        items = await store.asearch(ns("decisions", config), limit=5)
        return {"decisions": [i.value["title"] for i in items]}

    def prompt_assemble(state):
        return {"prompt": TEMPLATE.format(question=state["question"], context=" ".join(state["context"]))}

    async def llm_call(state):
        return {"response": await chat("You are terse.", state["prompt"], {})}

    async def summarize_memory(state):
        text = await chat("Summarize as JSON with summary and keywords.", state["response"],
                          {"max_tokens": 256, "response_format": {"type": "json_object"}})
        parsed = json.loads(text)
        return {"summary": parsed["summary"], "keywords": parsed["keywords"]}

    async def persist_memory(state, config):
        key = f"m-{state['cycle']}"
        await store.aput(ns("memories", config), key, {"summary": state["summary"], "keywords": state["keywords"]})
        return {"memory_id": key}

    async def persist_decision(state, config):
        key = f"d-{state['cycle']}"
        await store.aput(ns("decisions", config), key, {"title": state["summary"], "version": 1})
        return {"decision_id": key}

    async def persist_evidence(state, config):
        key = f"e-{state['cycle']}"
        await store.aput(ns("evidence", config), key, {"text": state["response"]})
        return {"evidence_id": key}

    async def link_decision_evidence(state, config):
        key = f"l-{state['cycle']}"
        await store.aput(ns("links", config), key, {"decision": state["decision_id"], "evidence": state["evidence_id"]})
        return {"link": key}

    def persist_session(state):
        # The checkpointer saves the thread's state: LangGraph's own session persistence.
        return {"status": "saved"}

    nodes = [repo_scan, context_select, retrieve_memory, retrieve_decision_context, prompt_assemble, llm_call,
             summarize_memory, persist_memory, persist_decision, persist_evidence, link_decision_evidence,
             persist_session]
    graph = StateGraph(Cycle)
    previous = START
    for node in nodes:
        graph.add_node(node.__name__, node)
        graph.add_edge(previous, node.__name__)
        previous = node.__name__
    graph.add_edge(previous, END)
    return graph


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def rss_kib():
    return status_kib("VmRSS:")


async def main():
    url = os.environ["FLEET_PLACE"]
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(conninfo=url, max_size=8, kwargs=kwargs, open=False) as pool:
        store, saver = AsyncPostgresStore(pool), AsyncPostgresSaver(pool)
        if os.environ.get("FLEET_SETUP") == "1":
            await store.setup()
            await saver.setup()
            return
        model_url = os.environ["FLEET_MODEL_URL"]
        index, workers = int(os.environ["FLEET_INDEX"]), int(os.environ["FLEET_WORKERS"])
        sessions, tag = int(os.environ["FLEET_SESSIONS"]), os.environ["FLEET_TAG"]
        window = int(os.environ["FLEET_WINDOW_MS"]) / 1000.0
        base = rss_kib()
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=1000)
        async with httpx.AsyncClient(timeout=30.0, limits=limits) as http:
            app = build(store, http, model_url, os.environ["FLEET_POLICY"]).compile(checkpointer=saver)
            keys = [f"{tag}/session-{i:04}" for i in range(index, sessions, workers)]
            print("READY", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu_before = usage.ru_utime + usage.ru_stime
            end = time.monotonic() + window
            walls, errors = [], [0]

            period = 2 * int(os.environ["FLEET_LATENCY_MS"]) / 1000.0

            async def session(i, key):
                # Sessions do not arrive together: each starts at its own point of one cycle's
                # model time. Cycles start until the window ends; the one in flight then finishes
                # (as planlock's).
                await asyncio.sleep(period * i / max(1, len(keys)))
                config = {"configurable": {"thread_id": key}}
                while time.monotonic() < end:
                    started = time.monotonic()
                    try:
                        await app.ainvoke({"question": "How do I rotate the API key?"}, config)
                    except Exception as e:  # counted, and the session stops, as a planlock worker's does
                        errors[0] += 1
                        print(f"{key}: {e!r}", file=sys.stderr)
                        return
                    walls.append(((time.monotonic() - started) * 1e3, time.monotonic() <= end))

            await asyncio.gather(*(session(i, k) for i, k in enumerate(keys)))
            usage = resource.getrusage(resource.RUSAGE_SELF)
            result = {"cycles": sum(1 for w in walls if w[1]), "all_cycles": len(walls),
                      "walls_ms": [w[0] for w in walls], "cpu_s": usage.ru_utime + usage.ru_stime - cpu_before,
                      "peak_kib": status_kib("VmHWM:"), "base_kib": base, "sessions": len(keys), "errors": errors[0]}
            print("RESULT " + json.dumps(result), flush=True)
            os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
