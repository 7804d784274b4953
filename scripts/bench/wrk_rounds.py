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


def socket_errors(path):
    """The requests of one wrk report that got no answer at all (connect, read, write and timeout errors)."""
    found = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", open(path).read())
    return sum(map(int, found.groups())) if found else 0


def median_round(directory, name, rounds=3):
    """The median of the rounds `directory/name-N.txt` by rate; prints every round's rate."""
    results = sorted((read_round(f"{directory}/{name}-{n}.txt") for n in range(1, rounds + 1)), key=lambda r: r[0])
    print(f"{name:>8} rounds: " + ", ".join(f"{result[0]:,.0f}/s" for result in results))
    return results[len(results) // 2]
