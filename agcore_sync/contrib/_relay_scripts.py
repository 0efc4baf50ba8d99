"""The Lua scripts of :class:`~agcore_sync.contrib.redis.RedisEventRelay`: what runs inside Redis.

Each script states its KEYS and ARGV and what it returns. Every script is
safe to run twice with the same arguments (redis-py sends a script again
when its reply is lost to a dropped connection): an append finds its own
sequence, a finish finds the end mark, a claim finds itself taken.
"""

from __future__ import annotations

__all__ = ["APPEND", "FINISH", "KEEP_ALIVE", "END_IF_LAPSED", "CLAIM"]

# KEYS: the turn's stream. ARGV: the event's JSON, ttl in ms ('' = none), the publish's sequence.
# Appends unless the stream already ends; returns {1, id} or {0, id of the end mark}.
# The sequence is stored in the entry (field 'seq'): a publish whose sequence
# is the newest entry's was appended already (redis-py sent the script again
# after a lost reply), and returns that entry's id without appending.
APPEND = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if last and last[2][3] == 'seq' and last[2][4] == ARGV[3] then return {1, last[1]} end
if last and last[2][1] == 'end' then return {0, last[1]} end
local id = redis.call('XADD', KEYS[1], '*', 'event', ARGV[1], 'seq', ARGV[3])
if ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, id}
"""

# KEYS: the turn's stream, its liveness mark, its cancel mark, its claim. ARGV: value, ttl in ms ('' = none).
# Like APPEND, and a finish ('end') also deletes the turn's liveness and
# cancel marks; the claim gets the stream's lifetime (a job delivered again
# while the stream exists still finds it).
FINISH = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
redis.call('DEL', KEYS[2], KEYS[3])
if last and last[2][1] == 'end' then return {0, last[1]} end
local id = redis.call('XADD', KEYS[1], '*', 'end', ARGV[1])
if ARGV[2] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.call('EXISTS', KEYS[4]) == 1 then redis.call('PEXPIRE', KEYS[4], ARGV[2]) end
end
return {1, id}
"""

# KEYS: the liveness mark, the claim. ARGV: seconds alive in ms, the mark's own lifetime in ms ('' = none).
# The claim lives at least as long as the mark, so a turn that runs for
# longer than the relay's ttl is still claimed while it runs.
# The deadline is the server's clock, so workers and readers on different machines agree.
KEEP_ALIVE = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[1], deadline, 'PX', ARGV[2])
  if redis.call('PTTL', KEYS[2]) > 0 and redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
else
  redis.call('SET', KEYS[1], deadline)
end
return deadline
"""

# KEYS: the turn's stream, its liveness mark. ARGV: the Error event's JSON, stream ttl in ms ('' = none).
# If the mark exists and its deadline has passed, and the stream has no end
# mark yet, append the Error event and the end mark and drop the liveness mark.
# Returns 1 when this call ended the turn, else 0.
END_IF_LAPSED = """
if redis.replicate_commands then redis.replicate_commands() end
local deadline = redis.call('GET', KEYS[2])
if not deadline then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(deadline) then return 0 end
redis.call('DEL', KEYS[2])
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if last and last[2][1] == 'end' then return 0 end
redis.call('XADD', KEYS[1], '*', 'event', ARGV[1])
redis.call('XADD', KEYS[1], '*', 'end', '1')
if ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
"""

# KEYS: the turn's claim. ARGV: the claimer's token, lifetime in ms ('' = none).
# Takes the claim unless another token holds it; returns 1 when the claim is
# the token's (taken now, or by this same call before its reply was lost).
CLAIM = """
local holder = redis.call('GET', KEYS[1])
if holder then return holder == ARGV[1] and 1 or 0 end
if ARGV[2] ~= '' then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) else redis.call('SET', KEYS[1], ARGV[1]) end
return 1
"""
