-- wrk script for bench/compare.sh: sends pre-signed requests from a file
-- written by bench/presign.sh, a different body per request.
--   wrk -t T -c C -d 4s -s bench/wrk.lua URL -- FILE START COUNT T MODE
-- Lines START .. START+COUNT-1 of FILE are split into T slices, one per
-- thread, so that ids stay unique across threads. Each thread formats its
-- slice once in init(); request() only returns the next string, so the
-- script costs wrk next to nothing per request.
-- MODE: unique  - each line once; running past the slice starts it again
--                 and is counted (printed as wrapped=N: ids were reused)
--       replay  - the same, for ids the server already recorded
--       forged  - each body with the signature of the next line: the right
--                 format, the wrong value
--       prefill - each line once, then stop (answers arrive; a few extra
--                 requests past the slice repeat its first lines)
-- done() prints one line: RESULT requests= duration_us= p50_us= p99_us=
-- non2xx= socket_errors= wrapped=.

local threads = {}
local counter = 0

function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local path, start, count, nthreads, mode = args[1], tonumber(args[2]), tonumber(args[3]), tonumber(args[4]), args[5] or "unique"
  local per = math.floor(count / nthreads)
  local f = assert(io.open(path, "rb"))
  local width = #f:read("*l") + 1 -- every line has the same length
  f:seek("set", (start + tid * per) * width)
  local lines = {}
  for i = 1, per + 1 do -- one more line: the forged signature of the last
    local l = f:read("*l")
    if not l then break end
    lines[#lines + 1] = l
  end
  f:close()
  assert(#lines >= per, "the request file is shorter than START+COUNT lines")
  reqs = {}
  for i = 1, per do
    local tab = lines[i]:find("\t", 1, true)
    local sig, body = lines[i]:sub(1, tab - 1), lines[i]:sub(tab + 1)
    if mode == "forged" then
      local nxt = lines[i + 1] or lines[1]
      sig = nxt:sub(1, nxt:find("\t", 1, true) - 1)
    end
    reqs[i] = wrk.format("POST", nil, {
      ["Content-Type"] = "application/json",
      ["x-service-webhook-signature"] = sig,
      ["X-Service-Attempt"] = "1",
    }, body)
  end
  n, wrapped, received, limit = 0, 0, 0, per + 64
  if mode ~= "prefill" then
    response = nil -- wrk then skips parsing replies
  end
end

function request()
  n = n + 1
  if n > #reqs then
    n, wrapped = 1, wrapped + 1
  end
  return reqs[n]
end

function response(status, headers, body)
  received = received + 1
  if received >= limit then
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local wrapped = 0
  for _, t in ipairs(threads) do
    wrapped = wrapped + (t:get("wrapped") or 0)
  end
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d non2xx=%d socket_errors=%d wrapped=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout, wrapped))
end
