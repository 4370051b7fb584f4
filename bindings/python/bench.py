"""planlock.validate against the schema's validators (Draft 2020-12, schema/plan-v1.schema.json):
jsonschema (pure Python) and jsonschema_rs (Rust, the fastest on PyPI), on the same plans,
interleaved rounds in one process (issues 35 and 39, CONTRACT §17). Build the wheel with
`maturin build --release` for figures; `--quick` runs one short round (what CI does). Needs
`pip install jsonschema==4.26.0 jsonschema-rs==0.61.0` beside the wheel.

Each side gets the plan's JSON text, as a producer holds it: the schema validators' time includes
`json.loads` (jsonschema_rs is also timed on the value alone). The plans: every valid plan of
tests/corpus/validate.json and the demo plans.
"""

import importlib.metadata
import json
import pathlib
import statistics
import sys
import time

import jsonschema
import jsonschema_rs

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
    fast = jsonschema_rs.Draft202012Validator(schema)
    texts = plans()
    values = [json.loads(t) for t in texts]

    def with_schema():
        for t in texts:
            validator.is_valid(json.loads(t))

    def with_schema_rs():
        for t in texts:
            fast.is_valid(json.loads(t))

    def with_schema_rs_value():
        for v in values:
            fast.is_valid(v)

    def with_planlock():
        for t in texts:
            planlock.validate(t)

    def with_planlock_value():
        for v in values:
            planlock.validate(v)

    rounds, repeat = (1, 3) if QUICK else (7, 50)
    sides = [
        ("jsonschema", with_schema, 1),
        ("jsonschema_rs", with_schema_rs, 20),
        ("jsonschema_rs value", with_schema_rs_value, 20),
        ("planlock", with_planlock, 20),
        ("planlock value", with_planlock_value, 20),
    ]
    times = {name: [] for name, _, _ in sides}
    for _ in range(rounds):
        for name, work, more in sides:
            runs = repeat * more
            began = time.perf_counter()
            for _ in range(runs):
                work()
            times[name].append((time.perf_counter() - began) / (runs * len(texts)) * 1e6)
    us = {name: statistics.median(t) for name, t in times.items()}
    print(f"python bench: {len(texts)} plans, {rounds} interleaved rounds")
    for package, name, how in [
        ("jsonschema", "jsonschema", "json.loads + is_valid"),
        ("jsonschema-rs", "jsonschema_rs", "json.loads + is_valid"),
        ("jsonschema-rs", "jsonschema_rs value", "is_valid on the dict"),
    ]:
        version = importlib.metadata.version(package)
        print(f"  {package} {version} ({how}): {us[name]:.1f} us a plan")
    planlock_us = us["planlock"]
    print(f"  planlock.validate (text): {planlock_us:.1f} us a plan: {us['jsonschema'] / planlock_us:.1f}x jsonschema, {us['jsonschema_rs'] / planlock_us:.2f}x jsonschema_rs")
    print(f"  planlock.validate (the dict, written as JSON in Rust): {us['planlock value']:.1f} us a plan: {us['jsonschema_rs value'] / us['planlock value']:.2f}x jsonschema_rs on the dict")

    # What the schema cannot catch: two steps out of the canonical order.
    plan = json.loads(texts[-2])
    plan["steps"][1], plan["steps"][2] = plan["steps"][2], plan["steps"][1]
    text = json.dumps(plan)
    report = planlock.validate(text)
    print(f"  steps swapped: jsonschema says valid={validator.is_valid(plan)}, jsonschema_rs valid={fast.is_valid(plan)}; planlock: {[(p.code, p.pointer) for p in report.problems]}")
    assert validator.is_valid(plan) and fast.is_valid(plan) and not report.ok


if __name__ == "__main__":
    main()
