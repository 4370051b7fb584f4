"""The LangGraph peer of `cargo bench --bench fleet`: one worker process.

The same work as planlock's demo plan, as a LangGraph graph of 12 nodes (one per step type),
with LangGraph's own PostgreSQL checkpointer (`langgraph-checkpoint-postgres`, LangGraph's
defaults) and its PostgreSQL store for memories, decisions, evidence and links, on the same
server; the model calls go to the same mock server over HTTP (httpx). The worker's S/W sessions
are threads (`thread_id`), all driven at once by asyncio, each cycle after cycle.

Protocol (as the Rust workers, `fleet_driver.py`): environment FLEET_*; prints READY, waits for
a line on stdin, runs for the window, prints `RESULT {json}` and exits. `FLEET_SETUP=1` creates
the tables once.
"""

import asyncio
import hashlib
import json
import os
from typing import TypedDict

import httpx
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from fleet_driver import drive, model_chat, status_kib


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
        return await model_chat(http, model_url, system, user, extra)

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
        base = status_kib("VmRSS:")
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=1000)
        async with httpx.AsyncClient(timeout=30.0, limits=limits) as http:
            app = build(store, http, model_url, os.environ["FLEET_POLICY"]).compile(checkpointer=saver)

            async def run_cycle(key, _number):
                await app.ainvoke({"question": "How do I rotate the API key?"}, {"configurable": {"thread_id": key}})

            await drive(run_cycle, base)


if __name__ == "__main__":
    asyncio.run(main())
