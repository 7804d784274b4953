"""Reading wrk's reports of the load benchmarks' rounds (imported by the
Python parts of bench-api.sh, compare-apis.sh, bench-scale.sh and
compare-rebuilds.sh)."""

import re


def read_round(path):
    """(requests per second, p50 ms, p99 ms, non-2xx answers, requests) of one wrk report."""
    text = open(path).read()
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))

    def percentile(p):
        value, unit = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    requests = int(re.search(r"(\d+) requests in", text).group(1))
    return rate, percentile(50), percentile(99), int(failed.group(1)) if failed else 0, requests


def failures(path):
    """The failed requests of one wrk report by kind (answers other than 2xx
    and 3xx, then connect, read, write and timeout errors), kinds that did
    not occur left out."""
    text = open(path).read()
    kinds = {}
    answered = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if answered:
        kinds["non-2xx"] = int(answered.group(1))
    found = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if found:
        kinds |= dict(zip(("connect", "read", "write", "timeout"), map(int, found.groups())))
    return {kind: count for kind, count in kinds.items() if count}


def described_failures(kinds):
    """`0`, or the total and its kinds: `2 (timeout 2)`."""
    if not kinds:
        return "0"
    return f"{sum(kinds.values())} (" + ", ".join(f"{kind} {count}" for kind, count in kinds.items()) + ")"


def median_round(directory, name, rounds=3):
    """The median of the rounds `directory/name-N.txt` by rate; prints every round's rate."""
    results = sorted((read_round(f"{directory}/{name}-{n}.txt") for n in range(1, rounds + 1)), key=lambda r: r[0])
    print(f"{name:>8} rounds: " + ", ".join(f"{result[0]:,.0f}/s" for result in results))
    return results[len(results) // 2]
