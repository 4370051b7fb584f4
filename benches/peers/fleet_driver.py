"""What every peer worker of `cargo bench --bench fleet` does around its cycles, one way for all
(the Rust workers' protocol): its share of the S sessions, READY, a line on stdin, the window,
`RESULT {json}`; and the model request. A peer gives only how to run one cycle of one session."""

import asyncio
import json
import os
import resource
import sys
import time


async def model_chat(http, model_url, system, user, extra):
    """One request to the mock model's chat completions, as every peer makes it: its answer."""
    body = {"model": "fleet-mock", "max_tokens": 512, "messages": [
        {"role": "system", "content": system}, {"role": "user", "content": user}], **extra}
    r = await http.post(f"{model_url}/chat/completions", json=body)
    r.raise_for_status()
    return r.json()["choices"][0]["message"]["content"]


def status_kib(field):
    """A field of this process's /proc status, in KiB (`VmRSS:`, `VmHWM:`)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


async def drive(run_cycle, base_kib):
    """Runs `await run_cycle(key, number)` for each of this worker's sessions, cycle after cycle,
    for the window (environment FLEET_*), then prints the result and exits the process."""
    index, workers = int(os.environ["FLEET_INDEX"]), int(os.environ["FLEET_WORKERS"])
    sessions, tag = int(os.environ["FLEET_SESSIONS"]), os.environ["FLEET_TAG"]
    window = int(os.environ["FLEET_WINDOW_MS"]) / 1000.0
    period = 2 * int(os.environ["FLEET_LATENCY_MS"]) / 1000.0
    keys = [f"{tag}/session-{i:04}" for i in range(index, sessions, workers)]
    print("READY", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    end = time.monotonic() + window
    walls, errors = [], [0]

    async def session(i, key):
        # Sessions do not arrive together: each starts at its own point of one cycle's model
        # time. Cycles start until the window ends; the one in flight then finishes (as
        # planlock's).
        await asyncio.sleep(period * i / max(1, len(keys)))
        number = 0
        while time.monotonic() < end:
            number += 1
            started = time.monotonic()
            try:
                await run_cycle(key, number)
            except Exception as e:  # counted, and the session stops, as a planlock worker's does
                errors[0] += 1
                print(f"{key}: {e!r}", file=sys.stderr)
                return
            walls.append(((time.monotonic() - started) * 1e3, time.monotonic() <= end))

    await asyncio.gather(*(session(i, k) for i, k in enumerate(keys)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result = {"cycles": sum(1 for w in walls if w[1]), "all_cycles": len(walls),
              "walls_ms": [w[0] for w in walls], "cpu_s": usage.ru_utime + usage.ru_stime - cpu_before,
              "peak_kib": status_kib("VmHWM:"), "base_kib": base_kib, "sessions": len(keys), "errors": errors[0]}
    print("RESULT " + json.dumps(result), flush=True)
    os._exit(0)
