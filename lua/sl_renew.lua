-- SPDX-License-Identifier: Apache-2.0
-- Renews the leases of SlidingLimitConcurrent (lua/sl_check.lua's 'n')
-- that requests still running hold: each lease's entry is scored again
-- with the store's time now, and its key lives one more lease. Sent by a
-- child's renewer (src/sl_lease.c) every third of a lease.
--
-- KEYS[i]   store key of lease i (one request's: one hash tag)
-- ARGV[1]   the request's member, as given to the check
-- ARGV[ARGV_HEAD+i] lease i in microseconds
--
-- Returns per lease 1 if renewed, 0 if it was gone: given back, or
-- expired already (a renewer that came late), which is not brought back,
-- since another request may have taken its place.

-- (lua/sl_prelude.lua comes first: the store's time and member.)
local n = #KEYS
if n == 0 or #ARGV ~= ARGV_HEAD + ARGV_PER * n or #member == 0 then
    return redis.error_reply('ERR slidinglimit: bad arguments')
end
local m = '1*' .. member
local score = #t[2] == 6 and t[1] .. t[2] or format('%d', now)
local out = {}
for i = 1, n do
    local s_lease = ARGV[ARGV_HEAD + ARGV_PER * (i - 1) + 1]
    local lease = find(s_lease, '^%d+$') and s_lease + 0
    if not lease or lease < 1000 then
        return redis.error_reply('ERR slidinglimit: bad lease ' .. i)
    end
    -- A key of another type answers an error: nothing to renew there.
    local at = tonumber(redis.pcall('ZSCORE', KEYS[i], m))
    out[i] = 0
    if at and at > now - lease then
        redis.call('ZADD', KEYS[i], 'XX', score, m)
        redis.call('PEXPIRE', KEYS[i], format('%d', ceil(lease / 1000) + 1))
        out[i] = 1
    end
end
return out
