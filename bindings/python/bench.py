"""planlock.validate against jsonschema (Draft 2020-12, schema/plan-v1.schema.json) on the same
plans, interleaved rounds in one process (issue 35, CONTRACT §17). Build the wheel with
`maturin build --release` for figures; `--quick` runs one short round (what CI does).

Each side gets the plan's JSON text, as a producer holds it: jsonschema's time includes
`json.loads`. The plans: every valid plan of tests/corpus/validate.json and the demo plans.
"""

import importlib.metadata
import json
import pathlib
import statistics
import sys
import time

import jsonschema

import planlock

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUICK = "--quick" in sys.argv


def plans():
    corpus = json.loads((ROOT / "tests/corpus/validate.json").read_text(encoding="utf-8"))
    out = [c["plan"] for c in corpus if c["report"]["ok"]]
    out += [(ROOT / "examples/plans" / n).read_text(encoding="utf-8") for n in ["demo_plan.json", "reviewed_plan.json"]]
    return out


def main():
    schema = json.loads((ROOT / "schema/plan-v1.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    texts = plans()

    def with_schema():
        for t in texts:
            validator.is_valid(json.loads(t))

    def with_planlock():
        for t in texts:
            planlock.validate(t)

    rounds, repeat = (1, 3) if QUICK else (7, 50)
    times = {"jsonschema": [], "planlock": []}
    for _ in range(rounds):
        for name, work in [("jsonschema", with_schema), ("planlock", with_planlock)]:
            began = time.perf_counter()
            for _ in range(repeat):
                work()
            times[name].append((time.perf_counter() - began) / (repeat * len(texts)) * 1e6)
    schema_us, planlock_us = statistics.median(times["jsonschema"]), statistics.median(times["planlock"])
    print(f"python bench: {len(texts)} plans, {rounds} interleaved rounds of {repeat}")
    version = importlib.metadata.version("jsonschema")
    print(f"  jsonschema {version} (json.loads + is_valid): {schema_us:.1f} us a plan")
    print(f"  planlock.validate: {planlock_us:.1f} us a plan: {schema_us / planlock_us:.1f}x faster")

    # What the schema cannot catch: two steps out of the canonical order.
    plan = json.loads(texts[-2])
    plan["steps"][1], plan["steps"][2] = plan["steps"][2], plan["steps"][1]
    text = json.dumps(plan)
    report = planlock.validate(text)
    print(f"  steps swapped: jsonschema says valid={validator.is_valid(plan)}; planlock: {[(p.code, p.pointer) for p in report.problems]}")
    assert validator.is_valid(plan) and not report.ok


if __name__ == "__main__":
    main()
