"""Reading callgrind's profiles (imported by the Python parts of
instructions-per-lookup.sh and instructions-per-event.sh)."""

import re
import subprocess


def total(path):
    """The instructions a profile counted in all."""
    for line in open(path):
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    raise ValueError(f"{path} names no total")


def self_costs(path):
    """Each function's own instructions in a profile, by name."""
    # callgrind_annotate lists functions before the annotated sources; a
    # function inlined from several files is listed once per file.
    listing = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                             capture_output=True, text=True, check=True).stdout
    listing = listing.split("file:function", 1)[1].split("Auto-annotated source", 1)[0]
    costs = {}
    for line in listing.splitlines():
        match = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*)", line)
        if match:
            function = re.sub(r"\s*\[[^\]]*\]\s*$", "", match.group(2))
            function = re.sub(r"^[\w./-]+\.(rs|c|h|S):(?!:)", "", function)
            costs[function] = costs.get(function, 0) + int(match.group(1).replace(",", ""))
    return costs


def largest_changes(a, b, count):
    """The `count` functions whose cost changed most from `a` to `b`, as (change, function), largest first."""
    changes = ((b.get(function, 0) - a.get(function, 0), function) for function in set(a) | set(b))
    return sorted(changes, key=lambda change: -abs(change[0]))[:count]
