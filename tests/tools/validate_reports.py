#!/usr/bin/python3
"""Every --json report streamcheck prints for the bundled examples (check,
explore random/dfs/dfs-schedules/pct/faults, shards of one and their merge,
replay) must validate against
docs/report.schema.json, and its verdict must agree with the exit code; so
must the JSON error object of an input or usage error (exit 2). Also checks
that the schema rejects broken reports, so this test can fail.

usage: validate_reports.py STREAMCHECK EXAMPLES_DIR SCHEMA
exit 0 ok, 1 a report does not match, 77 python3-jsonschema is missing."""
import copy
import json
import os
import pathlib
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed (apt-get install python3-jsonschema)")
    sys.exit(77)

binary, examples, schema_file = sys.argv[1:4]
schema = json.loads(pathlib.Path(schema_file).read_text())
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
failures = []
EXIT = {"clean": 0, "findings": 1, "errors": 1, "input error": 2}


def run(args):
    p = subprocess.run([binary, *args, "--json"], capture_output=True, text=True)
    where = "streamcheck " + " ".join(args)
    if p.returncode not in (0, 1, 2):
        failures.append(f"{where}: exit {p.returncode}: {p.stderr.strip()}")
        return None
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        failures.append(f"{where}: exit {p.returncode}, stdout not JSON ({e}): {p.stdout[:200]!r}")
        return None
    for error in validator.iter_errors(report):
        failures.append(f"{where}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
    if EXIT.get(report.get("verdict")) != p.returncode:
        failures.append(f"{where}: verdict {report.get('verdict')!r} but exit code {p.returncode}")
    return report


# Under ASan + UBSan (the sanitizer test preset, tests/test_scale.h) the
# explorations are a quarter as long: the same reports' shapes, the same
# code paths, a quarter of the schedules.
SCALE = 4 if os.environ.get("STREAMCHECK_TEST_SCALE") == "sanitizer" else 1


def schedules(n):
    return str(max(n // SCALE, 4))


reports = []
for number, trace in enumerate(sorted(pathlib.Path(examples).glob("*.trace"))):
    t = str(trace)
    one = run(["check", t])
    reports.append(one)
    # Under the sanitizers a process takes about 0.25 s to start (0.01 s in
    # a release build), so the dozen commands on each of the 74 examples
    # were a third of that suite's time: there every example is checked,
    # and every SCALE-th (and the one made to show a redundant wait) checked
    # with --redundant, streamed and explored in each way too. The default
    # build runs them all.
    if number % SCALE == 0 or "redundant" in trace.name:
        reports.append(run(["check", t, "--redundant"]))
    if number % SCALE != 0:
        continue
    reports.append(run(["explore", t, "--schedules", schedules(40)]))
    reports.append(run(["explore", t, "--strategy", "dfs", "--schedules", schedules(300)]))
    reports.append(run(["explore", t, "--strategy", "dfs-schedules", "--schedules", schedules(300)]))
    reports.append(run(["explore", t, "--strategy", "pct", "--schedules", schedules(30)]))
    reports.append(run(["explore", t, "--strategy", "pct", "--schedules", schedules(30), "--shard", "1/2"]))
    # The two parts of a dfs exploration, and their merge.
    parts = [run(["explore", t, "--strategy", "dfs", "--faults", "on", "--shard", f"{i}/2"]) for i in (0, 1)]
    reports.extend(parts)
    if all(parts):
        with tempfile.TemporaryDirectory() as folder:
            names = []
            for i, part in enumerate(parts):
                names.append(str(pathlib.Path(folder) / f"part{i}.json"))
                pathlib.Path(names[-1]).write_text(json.dumps(part))
            reports.append(run(["merge", *names]))
    reports.append(run(["explore", t, "--schedules", schedules(20), "--faults", "on"]))
    # A clean check shows no schedule; an empty one would not fit a program
    # that asks choices (replay refuses a schedule that ends early).
    schedule = next((one["schedule_texts"][f["schedule"]] for f in (one or {}).get("findings", [])), None)
    if schedule is not None:
        reports.append(run(["replay", t, "--schedule", schedule]))

# check --stream (issue 16): a report of its own kind for the traces it can
# stream, an input error at the line for those it cannot (host threads, if
# done, captures), and a usage error with --faults.
streamed, refused = [], []
for number, trace in enumerate(sorted(pathlib.Path(examples).glob("*.trace"))):
    if number % SCALE != 0:
        continue
    r = run(["check", str(trace), "--stream"])
    if r is not None:
        (refused if r["verdict"] == "input error" else streamed).append(r)
if not refused or any(e["error"]["kind"] != "trace" or not e["error"]["line"] for e in refused):
    failures.append(f"check --stream refused no example, or not at a line: {refused[:2]}")
if not any(r["coverage"].get("streamed") for r in streamed):
    failures.append("no streamed report says what it ran (coverage.streamed)")
if not any(f.get("producer_unchecked") for r in streamed for f in r["findings"]):
    failures.append("no streamed finding says its fix is unchecked")
usage = run(["check", str(pathlib.Path(examples) / "01_missing_wait.trace"), "--stream", "--faults", "on"])
if usage is None or usage["verdict"] != "input error" or usage["error"]["kind"] != "usage":
    failures.append(f"check --stream --faults on is no usage error: {usage}")
reports.extend(streamed)

# Input and usage errors (exit 2) print a JSON error object too (issue 10, S6).
bad = str(pathlib.Path(__file__).parent / "unknown_stream.trace")  # line 2 names an undeclared stream
errors = [run(["check", bad]), run(["explore", bad]),
          run(["replay", str(pathlib.Path(examples) / "01_missing_wait.trace"), "--schedule", "zzzzzzzz"]),
          run(["check", bad, "--no-such-option"])]
errors = [e for e in errors if e is not None]
if len(errors) != 4 or any(e["verdict"] != "input error" for e in errors):
    failures.append(f"an input error printed no JSON error object: {errors}")
elif errors[0]["error"]["line"] != 2 or errors[0]["error"]["kind"] != "trace":
    failures.append(f"the parse error is not at line 2 as kind trace: {errors[0]}")
reports = [r for r in reports if r is not None]

# Coverage: the schema's branches were exercised by real reports.
kinds = {f["kind"] for r in reports for f in r["findings"]}
strategies = {r["coverage"]["strategy"] for r in reports}
verdicts = {r["verdict"] for r in reports}
for want in ("data race", "use before ready", "use after free", "reuse race", "leak"):
    if want not in kinds:
        failures.append(f"no example report has a {want!r} finding")
for want in ("one schedule", "random", "dfs", "replay", "pct", "streamed"):
    if want not in strategies:
        failures.append(f"no report with strategy {want!r}")
for want in ("clean", "findings", "errors"):
    if want not in verdicts:
        failures.append(f"no report with verdict {want!r}")
if not any(r["notes"] for r in reports):
    failures.append("no report carries a note (a refused resource call)")
if not any(r.get("redundant") for r in reports):
    failures.append("no report carries a redundant wait or sync (--redundant)")
if not any(r["coverage"]["exhaustive"] for r in reports):
    failures.append("no report is exhaustive")
if not any(r["coverage"].get("dfs") for r in reports):
    failures.append("no dfs report stopped at its bound")
if not any(r["coverage"].get("shard") for r in reports):
    failures.append("no report of a shard")
if not any(r["coverage"].get("executions") for r in reports):
    failures.append("no dfs report counts executions")
for r in reports:
    if r["verdict"] == "findings" and not r["findings"]:
        failures.append(f"{r['file']}: verdict findings with no finding")

# The schema has teeth: each of these breakages of a real report must be rejected.
sample = next(r for r in reports if any(f["kind"] != "leak" for f in r["findings"]))
with_notes = next(r for r in reports if r["verdict"] == "errors")
not_exhaustive = next(r for r in reports if not r["coverage"]["exhaustive"])
with_redundant = next(r for r in reports if r.get("redundant"))


def broken(edit, base=sample):
    r = copy.deepcopy(base)
    edit(r)
    return r


race = next(i for i, f in enumerate(sample["findings"]) if f["kind"] != "leak")
mutations = {
    "missing notes": broken(lambda r: r.pop("notes")),
    "unknown top-level field": broken(lambda r: r.update(extra=1)),
    "schema_version 1": broken(lambda r: r.update(schema_version=1)),
    "producer_unchecked false": broken(lambda r: r["findings"][race].update(producer_unchecked=False)),
    "unknown kind": broken(lambda r: r["findings"][race].update(kind="deadlock")),
    "race without second": broken(lambda r: r["findings"][race].pop("second")),
    "race as warning": broken(lambda r: r["findings"][race].update(severity="warning")),
    "line as string": broken(lambda r: r["findings"][race]["first"].update(line="7")),
    "ranges as prose only": broken(lambda r: r["findings"][race].update(ranges="A[0:4]")),
    "bad schedule text": broken(lambda r: r.update(schedule_texts=["0 1"])),
    "schedule as text (schema_version 2)": broken(lambda r: r["findings"][race].update(schedule="v2:0")),
    "schedule_texts missing": broken(lambda r: r.pop("schedule_texts")),
    "bad policy text": broken(lambda r: r.update(policy="all on")),
    "findings verdict, no findings": broken(lambda r: r.update(findings=[])),
    "clean verdict with an error finding": broken(lambda r: r.update(verdict="clean")),
    "errors verdict with an error finding": broken(lambda r: r.update(verdict="errors")),
    "notes as prose": broken(lambda r: r.update(notes=["line 3: refused"]), with_notes),
    "errors as findings": broken(lambda r: r.update(verdict="findings"), with_notes),
    "errors as clean": broken(lambda r: r.update(verdict="clean"), with_notes),
    "silent partial coverage": broken(lambda r: r["coverage"].update(to_finish=[]), not_exhaustive),
    "coverage missing": broken(lambda r: r.pop("coverage")),
    "unknown redundancy rule": broken(lambda r: r["redundant"][0].update(rule="O9"), with_redundant),
    "redundant without why": broken(lambda r: r["redundant"][0].pop("why"), with_redundant),
    "input error without its error": {"tool": "streamcheck", "schema_version": 3, "verdict": "input error"},
}
for name, report in mutations.items():
    if validator.is_valid(report):
        failures.append(f"the schema accepts a broken report ({name})")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"{len(reports)} reports and {len(errors)} input errors valid against {schema_file}; kinds {sorted(kinds)}; "
      f"{len(mutations)} broken reports rejected")
