-- wrk script of the API load benchmark: rights-by-id lookups spread at random
-- over the generated works (LCC-0000000000 to LCC-<works - 1>), with the key
-- the benchmark issued. The same requests go to the constant-body ceiling.
local works = tonumber(os.getenv("BENCH_WORKS") or "100000")
local key = os.getenv("BENCH_API_KEY") or ""
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("seed", thread_count)
end

function init(arguments)
  math.randomseed(seed)
  wrk.headers["x-api-key"] = key
end

function request()
  return wrk.format("GET", string.format("/api/v1/public/v1/rights/LCC-%010d", math.random(0, works - 1)))
end
