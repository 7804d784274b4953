"""Asks a query API once for the rights profile of every generated work
(LCC-0000000000 to LCC-<works - 1>) with the key in BENCH_API_KEY, over
several keep-alive connections in parallel, and exits non-zero unless
every answer was 200: it fills the API's document cache, as a service
that has run a while holds it, before its cached rounds are measured.

    python3 scripts/bench/every_work.py PORT WORKS [CONNECTIONS=4]
"""

import http.client
import multiprocessing
import os
import sys


def ask(arguments):
    port, works, key, first, stride = arguments
    connection = http.client.HTTPConnection("127.0.0.1", port)
    failed = 0
    for work in range(first, works, stride):
        connection.request("GET", f"/api/v1/public/v1/rights/LCC-{work:010d}", headers={"x-api-key": key})
        response = connection.getresponse()
        response.read()
        failed += response.status != 200
    return failed


def main():
    port, works, key = int(sys.argv[1]), int(sys.argv[2]), os.environ["BENCH_API_KEY"]
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    with multiprocessing.Pool(connections) as pool:
        failed = sum(pool.map(ask, [(port, works, key, first, connections) for first in range(connections)]))
    print(f"asked for each of {works} works once; {failed} answers were not 200", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
