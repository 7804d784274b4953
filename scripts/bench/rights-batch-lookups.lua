-- wrk script of the batch lookup benchmark: POST /rights/lookup with 100
-- work identifiers drawn at random over the generated works, with the key
-- the benchmark issued. Each answer holds 100 profiles (or 404 results).
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
  wrk.headers["content-type"] = "application/json"
end

function request()
  local ids = {}
  for index = 1, 100 do
    ids[index] = string.format("\"LCC-%010d\"", math.random(0, works - 1))
  end
  return wrk.format("POST", "/api/v1/public/v1/rights/lookup", nil, "{\"lccIds\":[" .. table.concat(ids, ",") .. "]}")
end
