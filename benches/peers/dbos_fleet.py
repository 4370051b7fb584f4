"""The DBOS peer of `cargo bench --bench fleet`: one worker process.

The same work as planlock's demo plan, as a DBOS workflow of 12 steps (one per step type), each
step checkpointed by DBOS in its system database on the same PostgreSQL server (DBOS's defaults);
memories, decisions, evidence, links and the session's state are rows of the application
database (the bench's), written by the steps through a psycopg pool; the model calls go to the
same mock server over HTTP (httpx). The worker's S/W sessions are asyncio tasks, each running one
workflow (one cycle) after another.

Protocol (as the Rust workers, `fleet_driver.py`): environment FLEET_*; prints READY, waits for
a line on stdin, runs for the window, prints `RESULT {json}` and exits. `FLEET_SETUP=1` creates
the tables and DBOS's system database once.
"""

import asyncio
import hashlib
import json
import logging
import os
from urllib.parse import quote

import httpx
from dbos import DBOS
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from fleet_driver import drive, model_chat, status_kib

TEMPLATE = "Answer {question} using {context}"
QUESTION = "How do I rotate the API key?"

TABLES = """
CREATE TABLE IF NOT EXISTS dbos_fleet_memories (session text, key text, summary text, keywords jsonb,
    created_at timestamptz DEFAULT now(), PRIMARY KEY (session, key));
CREATE TABLE IF NOT EXISTS dbos_fleet_decisions (session text, key text, title text, version int,
    created_at timestamptz DEFAULT now(), PRIMARY KEY (session, key));
CREATE TABLE IF NOT EXISTS dbos_fleet_evidence (session text, key text, text text, PRIMARY KEY (session, key));
CREATE TABLE IF NOT EXISTS dbos_fleet_links (session text, key text, decision text, evidence text,
    PRIMARY KEY (session, key));
CREATE TABLE IF NOT EXISTS dbos_fleet_sessions (session text PRIMARY KEY, cycle int, state jsonb);
"""


def system_database_url(libpq):
    """DBOS's system database on the same server, as a SQLAlchemy URL: the bench's connection
    string is libpq's `key=value` form (a socket directory as its host)."""
    parts = dict(p.split("=", 1) for p in libpq.split())
    host, port, user = parts.get("host", "127.0.0.1"), parts.get("port", "5432"), parts.get("user", "postgres")
    return f"postgresql://{quote(user)}@/dbos_fleet_sys?host={quote(host)}&port={port}"


def steps(pool, http, model_url, policy):
    """The 12 steps, each a DBOS step (checkpointed), and the workflow that runs them."""

    async def chat(system, user, extra):
        return await model_chat(http, model_url, system, user, extra)

    async def execute(sql, args, fetch=False):
        async with pool.connection() as conn:
            cur = await conn.execute(sql, args)
            return await cur.fetchall() if fetch else None

    @DBOS.step()
    async def repo_scan():
        names = sorted(os.path.join(d, f) for d, _, fs in os.walk(policy) for f in fs)
        return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]

    @DBOS.step()
    async def context_select(question):
        return [w for w in question.split() if len(w) > 3][:5]

    @DBOS.step()
    async def retrieve_memory(session):
        rows = await execute("SELECT summary FROM dbos_fleet_memories WHERE session = %s "
                             "ORDER BY created_at DESC LIMIT 5", (session,), fetch=True)
        return [r["summary"] for r in rows]

    @DBOS.step()
    async def retrieve_decision_context(session):
        rows = await execute("SELECT title FROM dbos_fleet_decisions WHERE session = %s "
                             "ORDER BY created_at DESC LIMIT 5", (session,), fetch=True)
        return [r["title"] for r in rows]

    @DBOS.step()
    async def prompt_assemble(question, context):
        return TEMPLATE.format(question=question, context=" ".join(context))

    @DBOS.step()
    async def llm_call(prompt):
        return await chat("You are terse.", prompt, {})

    @DBOS.step()
    async def summarize_memory(response):
        text = await chat("Summarize as JSON with summary and keywords.", response,
                          {"max_tokens": 256, "response_format": {"type": "json_object"}})
        parsed = json.loads(text)
        return {"summary": parsed["summary"], "keywords": parsed["keywords"]}

    @DBOS.step()
    async def persist_memory(session, cycle, summary):
        key = f"m-{cycle}"
        await execute("INSERT INTO dbos_fleet_memories (session, key, summary, keywords) VALUES (%s, %s, %s, %s) "
                      "ON CONFLICT DO NOTHING", (session, key, summary["summary"], json.dumps(summary["keywords"])))
        return key

    @DBOS.step()
    async def persist_decision(session, cycle, summary):
        key = f"d-{cycle}"
        await execute("INSERT INTO dbos_fleet_decisions (session, key, title, version) VALUES (%s, %s, %s, 1) "
                      "ON CONFLICT DO NOTHING", (session, key, summary["summary"]))
        return key

    @DBOS.step()
    async def persist_evidence(session, cycle, response):
        key = f"e-{cycle}"
        await execute("INSERT INTO dbos_fleet_evidence (session, key, text) VALUES (%s, %s, %s) "
                      "ON CONFLICT DO NOTHING", (session, key, response))
        return key

    @DBOS.step()
    async def link_decision_evidence(session, cycle, decision, evidence):
        key = f"l-{cycle}"
        await execute("INSERT INTO dbos_fleet_links (session, key, decision, evidence) VALUES (%s, %s, %s, %s) "
                      "ON CONFLICT DO NOTHING", (session, key, decision, evidence))
        return key

    @DBOS.step()
    async def persist_session(session, cycle, version, memory):
        state = json.dumps({"cycle": cycle, "version": version, "memory": memory})
        await execute("INSERT INTO dbos_fleet_sessions (session, cycle, state) VALUES (%s, %s, %s) "
                      "ON CONFLICT (session) DO UPDATE SET cycle = EXCLUDED.cycle, state = EXCLUDED.state",
                      (session, cycle, state))
        return "saved"

    @DBOS.workflow()
    async def cycle(session, number):
        version = await repo_scan()
        context = await context_select(QUESTION)
        await retrieve_memory(session)
        await retrieve_decision_context(session)
        prompt = await prompt_assemble(QUESTION, context)
        response = await llm_call(prompt)
        summary = await summarize_memory(response)
        memory = await persist_memory(session, number, summary)
        decision = await persist_decision(session, number, summary)
        evidence = await persist_evidence(session, number, response)
        await link_decision_evidence(session, number, decision, evidence)
        return await persist_session(session, number, version, memory)

    return cycle


async def main():
    url = os.environ["FLEET_PLACE"]
    logging.getLogger("dbos").setLevel(logging.WARNING)
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(conninfo=url, max_size=8, kwargs=kwargs, open=False) as pool:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=1000)
        async with httpx.AsyncClient(timeout=30.0, limits=limits) as http:
            cycle = steps(pool, http, os.environ.get("FLEET_MODEL_URL", ""), os.environ.get("FLEET_POLICY", "."))
            DBOS(config={"name": "planlock-fleet-peer", "system_database_url": system_database_url(url)})
            if os.environ.get("FLEET_SETUP") == "1":
                async with pool.connection() as conn:
                    for statement in filter(str.strip, TABLES.split(";")):
                        await conn.execute(statement)
                DBOS.launch()  # creates and migrates DBOS's system database, once
                os._exit(0)
            base = status_kib("VmRSS:")
            DBOS.launch()
            await drive(cycle, base)


if __name__ == "__main__":
    asyncio.run(main())
