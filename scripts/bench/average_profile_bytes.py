"""Prints the average size in bytes of the rights profiles of 200 random works
(seed 7) served on 127.0.0.1:PORT, with the key in BENCH_API_KEY: the body
size the constant-body ceiling answers with in the load benchmarks.

    python3 scripts/bench/average_profile_bytes.py PORT WORKS
"""

import os
import random
import sys
import urllib.error
import urllib.request

port, works = sys.argv[1], int(sys.argv[2])
sizes = []
for index in random.Random(7).sample(range(works), 200):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/public/v1/rights/LCC-{index:010d}",
                                     headers={"x-api-key": os.environ["BENCH_API_KEY"]})
    try:
        sizes.append(len(urllib.request.urlopen(request).read()))
    except urllib.error.HTTPError:
        pass
print(sum(sizes) // len(sizes))
