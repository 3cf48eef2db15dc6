#!/usr/bin/python3
"""Every --json report streamcheck prints for the bundled examples must
validate against docs/report.schema.json, and its verdict must agree with
the exit code. Also checks that the schema rejects broken reports, so this
test can fail.

usage: validate_reports.py STREAMCHECK EXAMPLES_DIR SCHEMA
exit 0 ok, 1 a report does not match, 77 python3-jsonschema is missing."""
import copy
import json
import pathlib
import subprocess
import sys

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


def run(args):
    p = subprocess.run([binary, *args, "--json"], capture_output=True, text=True)
    where = "streamcheck " + " ".join(args)
    if p.returncode not in (0, 1):
        failures.append(f"{where}: exit {p.returncode}: {p.stderr.strip()}")
        return None
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        failures.append(f"{where}: not JSON ({e}): {p.stdout[:200]}")
        return None
    for error in validator.iter_errors(report):
        failures.append(f"{where}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
    expected = "findings" if p.returncode == 1 else "clean"
    if report.get("verdict") != expected:
        failures.append(f"{where}: verdict {report.get('verdict')!r} but exit code {p.returncode}")
    return report


reports = []
for trace in sorted(pathlib.Path(examples).glob("*.trace")):
    t = str(trace)
    one = run(["check", t])
    reports.append(one)
    reports.append(run(["explore", t, "--schedules", "40"]))
    reports.append(run(["explore", t, "--strategy", "dfs", "--schedules", "300"]))
    reports.append(run(["explore", t, "--schedules", "20", "--faults", "on"]))
    schedule = next((f["schedule"] for f in (one or {}).get("findings", [])), "")
    reports.append(run(["replay", t, "--schedule", schedule]))
reports = [r for r in reports if r is not None]

# Coverage: the schema's branches were exercised by real reports.
kinds = {f["kind"] for r in reports for f in r["findings"]}
strategies = {r["strategy"] for r in reports}
for want in ("data race", "use before ready", "use after free", "reuse race", "leak"):
    if want not in kinds:
        failures.append(f"no example report has a {want!r} finding")
for want in ("one schedule", "random", "dfs", "replay"):
    if want not in strategies:
        failures.append(f"no report with strategy {want!r}")
if not any(r["notes"] for r in reports):
    failures.append("no report carries a note (a refused resource call)")

# The schema has teeth: each of these breakages of a real report must be rejected.
sample = next(r for r in reports if any(f["kind"] != "leak" for f in r["findings"]))

def broken(edit):
    r = copy.deepcopy(sample)
    edit(r)
    return r


race = next(i for i, f in enumerate(sample["findings"]) if f["kind"] != "leak")
mutations = {
    "missing notes": lambda r: r.pop("notes"),
    "unknown top-level field": lambda r: r.update(extra=1),
    "schema 2": lambda r: r.update(schema=2),
    "unknown kind": lambda r: r["findings"][race].update(kind="deadlock"),
    "race without second": lambda r: r["findings"][race].pop("second"),
    "race as warning": lambda r: r["findings"][race].update(severity="warning"),
    "line as string": lambda r: r["findings"][race]["first"].update(line="7"),
    "bad schedule text": lambda r: r["findings"][race].update(schedule="0 1"),
    "bad policy text": lambda r: r.update(policy="all on"),
}
for name, edit in mutations.items():
    if validator.is_valid(broken(edit)):
        failures.append(f"the schema accepts a broken report ({name})")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"{len(reports)} reports valid against {schema_file}; kinds {sorted(kinds)}; "
      f"{len(mutations)} broken reports rejected")
