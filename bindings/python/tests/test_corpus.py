"""The shared corpus (tests/corpus/, CONTRACT §17) run against the wheel: every verdict, code,
class, pointer and message, and every hash, equal to the Rust library's."""

import json
import os
import pathlib
import threading
import time

import pytest

import planlock

CORPUS = pathlib.Path(__file__).resolve().parents[3] / "tests" / "corpus"


def load(name):
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


def text(case):
    return case["plan"] + " " * case.get("pad", 0)


def as_report(report):
    return {"ok": report.ok, "class": report.class_, "problems": [p.to_dict() for p in report.problems]}


@pytest.mark.parametrize("case", load("validate.json"), ids=lambda c: c["name"])
def test_every_case_gets_the_rust_report(case):
    assert as_report(planlock.validate(text(case))) == case["report"]
    assert as_report(planlock.validate(text(case).encode("utf-8"))) == case["report"]


@pytest.mark.parametrize("case", load("validate.json"), ids=lambda c: c["name"])
def test_a_value_gets_the_verdict_of_its_text(case):
    # The corpus both ways: the value json.loads reads, given as a dict, gets the report its
    # text (json.dumps) gets; a value with no JSON form (inf from 1e400) is refused, as its
    # text is.
    try:
        value = json.loads(text(case))
    except ValueError:
        return
    try:
        report = planlock.validate(value)
    except planlock.PlanlockError as e:
        assert e.code == "invalid-json" and not planlock.validate(json.dumps(value)).ok
        return
    assert as_report(report) == as_report(planlock.validate(json.dumps(value)))
    if json.dumps(value, separators=(",", ":"), ensure_ascii=False) == json.dumps(json.loads(case["plan"]), separators=(",", ":"), ensure_ascii=False) and not case.get("pad") and case["report"]["ok"]:
        assert as_report(report) == case["report"]


@pytest.mark.parametrize("vector", load("hash.json"), ids=lambda v: v["name"])
def test_every_hash_vector_hashes_the_same(vector, tmp_path):
    assert planlock.plan_hash_of(tuple(vector["documents"]), vector["plan"]) == vector["hash"]
    assert planlock.plan_hash_of(tuple(vector["documents"]), json.loads(vector["plan"])) == vector["hash"]
    # As the CLI: the plan's policyProfile under a policy root; and a profile directory itself.
    profile = tmp_path / json.loads(vector["plan"])["metadata"]["policyProfile"]
    profile.mkdir(parents=True)
    for name, document in zip(["modes.yaml", "triggers.yaml", "bundles.yaml"], vector["documents"]):
        (profile / name).write_text(document, encoding="utf-8")
    assert planlock.plan_hash(tmp_path, vector["plan"]) == vector["hash"]
    assert planlock.plan_hash_in(profile, vector["plan"]) == vector["hash"]


def test_errors_carry_the_stable_code_and_nothing_outside_the_directory_is_read(tmp_path):
    plan = load("hash.json")[0]["plan"]
    with pytest.raises(planlock.PlanlockError) as e:
        planlock.plan_hash_of(("a: [", "[]", "{}"), plan)
    assert e.value.code == "yaml"
    with pytest.raises(planlock.PlanlockError) as e:
        planlock.plan_hash_of(("{}", "[]", "{}"), "{}")
    assert e.value.code == "plan-rejected" and e.value.problems[0].code
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "modes.yaml").write_text("secret: 1\n")
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "modes.yaml").symlink_to(outside / "modes.yaml")
    (profile / "triggers.yaml").write_text("[]\n")
    (profile / "bundles.yaml").write_text("{}\n")
    with pytest.raises(planlock.PlanlockError) as e:
        planlock.plan_hash_in(profile, plan)
    assert e.value.code == "profile-outside-root"
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "modes.yaml")
    (fifo / "triggers.yaml").write_text("[]\n")
    (fifo / "bundles.yaml").write_text("{}\n")
    with pytest.raises(planlock.PlanlockError) as e:
        planlock.plan_hash_in(fifo, plan)
    assert e.value.code == "profile-invalid"


def test_canonical_json_the_schema_and_the_registry():
    assert planlock.canonical_json({"b": 1, "a": [1.5, "é", 1e21]}) == '{"a":[1.5,"é",1e+21],"b":1}'
    # A str is a str, not JSON text: canonical_json_text reads text.
    assert planlock.canonical_json('{"b":1,"a":2}') == '"{\\"b\\":1,\\"a\\":2}"'
    assert planlock.canonical_json_text('{"b":1,"a":2}') == '{"a":2,"b":1}'
    assert planlock.canonical_json_text(b'[1.0]') == "[1]"
    for bad in ['{"a":1e400}', '{"a":1,"a":2}', '["\\udfff"]', "[" + "1," * 600_000 + "1]"]:
        with pytest.raises(planlock.PlanlockError) as e:
            planlock.canonical_json_text(bad)
        assert e.value.code == "invalid-json", bad[:40]
    import datetime
    for bad in [float("nan"), float("inf"), {"when": datetime.datetime(2026, 1, 1)}, {1: "a"}, "\ud800", {"s": {1, 2}}]:
        with pytest.raises(planlock.PlanlockError) as e:
            planlock.canonical_json(bad)
        assert e.value.code == "invalid-json" and e.value.class_ == "CycleFail", repr(bad)
    with pytest.raises(planlock.PlanlockError, match="at /when"):
        planlock.canonical_json({"when": datetime.date(2026, 1, 1)})
    assert json.loads(planlock.schema())["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    steps = json.loads(planlock.registry())
    assert [s["type"] for s in steps if s["mandatory"]] == ["ContextSelect", "PromptAssemble", "LLMCall", "PersistSession"]


def test_hostile_inputs_are_answered_never_a_crash():
    for bad in ["", "\0", "[" * 100_000, '{"a":' + "1" * 100_000 + "}", b"\xff\xfe"]:
        assert not planlock.validate(bad).ok
    with pytest.raises(TypeError, match="plan must be"):
        planlock.validate(42)
    with pytest.raises(TypeError, match="documents must be"):
        planlock.plan_hash_of(("a", "b"), "{}")
    with pytest.raises(planlock.PlanlockError) as e:
        planlock.validate("\ud800")
    assert e.value.code == "invalid-json"
    # A value that contains itself, or nests past any plan, is answered.
    loop = []
    loop.append(loop)
    with pytest.raises(planlock.PlanlockError, match="contains itself"):
        planlock.validate({"steps": loop})
    deep = {}
    for _ in range(100_000):
        deep = {"a": deep}
    assert planlock.validate(deep).problems[0].code == "too-deep"
    # A value past a plan's size: its length counted, not kept.
    report = planlock.validate({"x": "y" * (2 << 20)})
    assert report.problems[0].code == "too-large" and "2097" in report.problems[0].message


def test_errors_and_reports_are_native():
    import pickle

    with pytest.raises(planlock.PlanlockError) as e:
        planlock.plan_hash_of(("{}", "[]", "{}"), "{}")
    err = e.value
    assert err.code in planlock.ERROR_CODES and not str(err).startswith(err.code)
    again = pickle.loads(pickle.dumps(err))
    assert (again.code, again.class_, str(again)) == (err.code, err.class_, str(err))
    assert [p.to_dict() for p in again.problems] == [p.to_dict() for p in err.problems] and again.problems
    report = planlock.validate("{}")
    assert report.to_dict()["ok"] is False and report.to_dict()["class"] in ("CycleFail", "FailFast")
    assert json.loads(json.dumps(report.to_dict()))["problems"][0]["code"]
    assert planlock.__version__ == "0.1.0"


def test_the_gil_is_released_while_validating():
    # A plan of nearly 1 MiB, validated again and again for 0.5 s: another Python thread runs at
    # the speed it has with the GIL free (it would barely run if the GIL were held).
    plan = load("validate.json")[0]["plan"]
    filler = ",".join(f'"k{i}":"{"x" * 64}"' for i in range(12_000))
    big = plan.replace('"vars":{', '"vars":{' + filler + ",", 1)
    assert 900_000 < len(big) < 1 << 20 and planlock.validate(big).ok
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()

    def rate(work):
        start, began = count[0], time.perf_counter()
        while time.perf_counter() - began < 0.5:
            work()
        return (count[0] - start) / (time.perf_counter() - began)

    free = rate(lambda: time.sleep(0.01))
    during = rate(lambda: planlock.validate(big))
    stop.set()
    thread.join()
    assert during > 0.3 * free, f"{during:.0f}/s while validating against {free:.0f}/s"
