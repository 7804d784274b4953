-- wrk script of the API load benchmark: rights-by-id lookups spread at random
-- over the generated works (LCC-0000000000 to LCC-<works - 1>), with the key
-- the benchmark issued. The same requests go to the constant-body ceiling.
-- With BENCH_BATCH=N it sends batches instead: POST /rights/lookup naming N
-- random works. With BENCH_SUFFIX=/evidence (or another sub-resource) it
-- asks for that document of each random work.
local works = tonumber(os.getenv("BENCH_WORKS") or "100000")
local key = os.getenv("BENCH_API_KEY") or ""
local batch = tonumber(os.getenv("BENCH_BATCH") or "0")
local suffix = os.getenv("BENCH_SUFFIX") or ""
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("seed", thread_count)
end

function init(arguments)
  math.randomseed(seed)
  wrk.headers["x-api-key"] = key
  if batch > 0 then
    wrk.headers["content-type"] = "application/json"
  end
end

local function random_id()
  return string.format("LCC-%010d", math.random(0, works - 1))
end

function request()
  if batch == 0 then
    return wrk.format("GET", "/api/v1/public/v1/rights/" .. random_id() .. suffix)
  end
  local ids = {}
  for index = 1, batch do
    ids[index] = "\"" .. random_id() .. "\""
  end
  return wrk.format("POST", "/api/v1/public/v1/rights/lookup", nil, "{\"lccIds\":[" .. table.concat(ids, ",") .. "]}")
end
