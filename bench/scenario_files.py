"""What validating one scenario file costs, in time and peak memory; no Django needed.

    .venv/bin/python bench/scenario_files.py [--unbounded MB]

Builds files in a temporary folder and validates each with `load_scenario_files` (what
`validate_scenarios` runs), measuring peak Python memory with tracemalloc:

- a shipped scenario (about 15 KB);
- a valid scenario padded with a comment to exactly the size limit (256 KB);
- the costliest file that fits the limit: 256 KB of one-line facts, each one a mapping that
  YAML and pydantic turn into objects;
- a 23 MB file of such facts (the size of the file in the issue that took 1.3 GB): refused by
  its size before a byte is read.

`--unbounded MB` also validates a file of MB megabytes of such facts as the importer did before
the limit (PyYAML's safe_load, then the schema), to show what the limit prevents; cost grows
linearly with the size (the issue measured 1.3 GB for 23 MB).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

# Run as a plain script from anywhere: make the project root importable.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scenarios_app.files import MAX_FILE_BYTES, load_scenario_files  # noqa: E402
from scenarios_app.schemas import validate_scenario_document  # noqa: E402

SHIPPED = ROOT / "scenarios" / "greenvale-listeria.yaml"
MB = 2**20


def facts_file(size: int) -> str:
    """A scenario whose facts list fills `size` bytes: the most objects per byte the format
    allows (a fact is a three-key mapping on one line)."""
    head, _, tail = SHIPPED.read_text(encoding="utf-8").partition("\nfacts:\n")
    _, _, rest = tail.partition("\nuncertainties:")
    rest = "\nuncertainties:" + rest
    lines, used, number = [], len(head) + len(rest) + 8, 1
    while True:
        label = ("neutral", "favourable", "incriminating")[number % 3]
        line = f"- {{id: F{number}, label: {label}, text: Fact {number}.}}\n"
        if used + len(line) > size:
            break
        lines.append(line)
        used += len(line)
        number += 1
    return head + "\nfacts:\n" + "".join(lines) + rest


def padded_file(size: int) -> str:
    text = SHIPPED.read_text(encoding="utf-8")
    return text + "#" + "x" * (size - len(text.encode("utf-8")) - 2) + "\n"


def measure(label: str, run: Callable[[], Any]) -> None:
    """Time without tracing (tracemalloc slows Python code several times), then the peak."""
    started = time.perf_counter()
    outcome = run()
    seconds = time.perf_counter() - started
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label:<46} {seconds:7.2f} s  peak {peak / MB:8.1f} MB  {outcome}")


def validate(path: Path) -> Callable[[], str]:
    def run() -> str:
        report = load_scenario_files([str(path)])
        return "valid" if report.ok else report.problems[0].split(": ", 1)[1][:60]
    return run


def unbounded(path: Path) -> Callable[[], str]:
    def run() -> str:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        _, problems = validate_scenario_document(data)
        return "valid" if not problems else problems[0].message[:60]
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unbounded", type=float, metavar="MB",
                        help="also validate a file this large without the limit (slow)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = {
            "shipped scenario": SHIPPED,
            "padded to the limit": Path(folder, "padded.yaml"),
            "facts filling the limit": Path(folder, "facts.yaml"),
            "23 MB of facts": Path(folder, "huge.yaml"),
        }
        files["padded to the limit"].write_text(padded_file(MAX_FILE_BYTES), encoding="utf-8")
        files["facts filling the limit"].write_text(facts_file(MAX_FILE_BYTES), encoding="utf-8")
        files["23 MB of facts"].write_text(facts_file(23 * 10**6), encoding="utf-8")
        print(f"limit {MAX_FILE_BYTES} bytes; python {sys.version.split()[0]}")
        for label, path in files.items():
            measure(f"{label} ({path.stat().st_size} bytes)", validate(path))
        if args.unbounded:
            path = Path(folder, "unbounded.yaml")
            path.write_text(facts_file(int(args.unbounded * 10**6)), encoding="utf-8")
            measure(f"{args.unbounded:g} MB of facts, without the limit", unbounded(path))


if __name__ == "__main__":
    main()
