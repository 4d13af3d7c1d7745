-- SPDX-License-Identifier: Apache-2.0
-- wrk script: every request carries X-Forwarded-For from a pool of client
-- addresses (mod_remoteip trusts 127.0.0.1), so a limiter keyed by client
-- address sees many identities. The requests are formatted once in init:
-- the per-request cost on the client side is a table lookup, the same for
-- every configuration.
--
--   wrk ... -s clients.lua URL -- POOL      POOL identities (default 4096)
--   wrk ... -s clients.lua URL -- flood     one identity only
--
-- Addresses come from 198.18.0.0/15, the range RFC 2544 reserves for
-- benchmarks.
local reqs = {}
local n = 0
local i = 0

function init(args)
    local pool = args[1] or "4096"
    local count = pool == "flood" and 1 or tonumber(pool)
    for k = 0, count - 1 do
        local addr = pool == "flood" and "198.19.255.1"
            or string.format("198.18.%d.%d", math.floor(k / 250) % 250,
                             k % 250 + 1)
        reqs[k + 1] = wrk.format("GET", wrk.path,
                                 { ["X-Forwarded-For"] = addr })
    end
    n = count
    -- Threads start at different places in the pool.
    local addr_hex = tostring({}):match("0x(%x+)") or "0"
    math.randomseed(os.time() + tonumber(addr_hex, 16) % 100000)
    i = math.random(n) - 1
end

function request()
    i = i % n + 1
    return reqs[i]
end
