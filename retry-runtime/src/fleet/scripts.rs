//! The fleet store's Lua scripts, each one atomic step on one upstream's key. Times are Redis's
//! own (`TIME`), and go out as remaining durations.

use std::sync::LazyLock;

/// Pause an upstream: `KEYS[1]` its pause, `ARGV` the pause and its cap in milliseconds, the
/// hint's kind, the channel, and who tells it (`origin name`). The latest end wins: a shorter
/// pause never shortens a longer one. Publishes `origin name left_ms kind` when it sets one.
/// Returns the milliseconds left.
pub(super) static PAUSE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ms = math.min(tonumber(ARGV[1]), tonumber(ARGV[2]))
if ms <= 0 then return 0 end
local wanted = now + ms
local current = redis.call('GET', KEYS[1])
if current then
  local ends = tonumber(string.match(current, '^(%d+)'))
  if ends and ends >= wanted then return ends - now end
end
redis.call('SET', KEYS[1], wanted .. ' ' .. ARGV[3], 'PX', ms)
redis.call('PUBLISH', ARGV[4], 'pause ' .. ARGV[5] .. ' ' .. ms .. ' ' .. ARGV[3])
return ms
",
    )
});

/// Read an upstream's pause: `KEYS[1]` its pause. Returns `{left_ms, kind}`, or nil if it is
/// not paused.
pub(super) static READ: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local current = redis.call('GET', KEYS[1])
if not current then return nil end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends, kind = string.match(current, '^(%d+) (%S+)')
if not ends then return nil end
local left = tonumber(ends) - now
if left <= 0 then return nil end
return {left, kind}
",
    )
});

/// An outage failure: `KEYS[1]` the upstream's recent outage failures (a sorted set, by Redis
/// time), `KEYS[2]` its gate. `ARGV`: who (`origin`), a unique member, the window and the
/// failures that open the gate, whether the provider said so itself (`1`: a `503` or a `529`,
/// which counts alone; `0`: a transport error, which needs a second process), the first
/// probe's wait, the lease, the channel and the upstream's name. Opens the gate when the
/// quorum is met: the failures in the window reach the count and come from two processes or
/// more, or this one is the provider's own. The failure's own process probes first; publishes
/// `open origin name prober first_probe_ms`. Returns 1 if it opened the gate.
pub(super) static OUTAGE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[1] .. ':' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], window)
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
if #members < tonumber(ARGV[4]) then return 0 end
local origins = {}
local distinct = 0
for _, member in ipairs(members) do
  local origin = string.match(member, '^([^:]+)')
  if not origins[origin] then origins[origin] = true; distinct = distinct + 1 end
end
if distinct < 2 and ARGV[5] ~= '1' then return 0 end
local first = tonumber(ARGV[6])
redis.call('SET', KEYS[2], ARGV[1] .. ' ' .. (now + tonumber(ARGV[7])), 'PX', window * 10)
redis.call('PUBLISH', ARGV[8], 'open ' .. ARGV[1] .. ' ' .. ARGV[9] .. ' ' .. ARGV[1] .. ' ' .. first)
return 1
",
    )
});

/// The prober's probe failed: `KEYS[1]` the gate; `ARGV` who, the lease from now. Renews the
/// lease if `origin` holds it.
pub(super) static PROBE_FAILED: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local gate = redis.call('GET', KEYS[1])
if not gate then return 0 end
local prober = string.match(gate, '^(%S+)')
if prober ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. (now + tonumber(ARGV[2])), 'KEEPTTL')
return 1
",
    )
});

/// The gate closed (a probe succeeded, or an answer came): `KEYS[1]` the failures, `KEYS[2]`
/// the gate; `ARGV` who, the channel and the upstream's name. Publishes `close origin name` if
/// the gate was open.
pub(super) static CLOSE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
redis.call('DEL', KEYS[1])
if redis.call('DEL', KEYS[2]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 'close ' .. ARGV[1] .. ' ' .. ARGV[3])
return 1
",
    )
});

/// Read the gate, taking its probe over if its prober's lease ran out (a crashed prober frees
/// it): `KEYS[1]` the gate; `ARGV` who, the lease from now. Returns nil (closed), `1` (this
/// process probes) or `0` (another does).
pub(super) static GATE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local gate = redis.call('GET', KEYS[1])
if not gate then return nil end
local prober, lease = string.match(gate, '^(%S+) (%d+)')
if prober == ARGV[1] then return 1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(lease) > now then return 0 end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. (now + tonumber(ARGV[2])), 'KEEPTTL')
return 1
",
    )
});

/// This process is a member of the fleet now: `KEYS[1]` the members (a sorted set by when
/// each was last seen); `ARGV` who (`origin`) and how long a member counts unseen. Returns the
/// members counted.
pub(super) static MEMBERS: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return redis.call('ZCARD', KEYS[1])
",
    )
});

/// The fleet's retry budget for an upstream: `KEYS[1]` its bucket (thousandths of a token, and
/// when it was last kept); `ARGV` the requests a process hands in, the percent of them that
/// may be retried, the floor a second, the bucket's cap in tokens, and the tokens the process
/// asks for. The floor accrues by Redis's clock; the bucket never holds more than its cap; a
/// bucket no process kept for a minute expires (`budget::KEPT_MS`), and starts again empty.
/// Returns the tokens leased (as `budget::step` computes them).
pub(super) static BUDGET: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kept = redis.call('HMGET', KEYS[1], 'milli', 'at')
local milli = tonumber(kept[1]) or 0
local at = tonumber(kept[2]) or now
local cap = tonumber(ARGV[4]) * 1000
milli = milli + math.max(0, now - at) * tonumber(ARGV[3]) + tonumber(ARGV[1]) * tonumber(ARGV[2]) * 10
if milli > cap then milli = cap end
local grant = math.min(tonumber(ARGV[5]), math.floor(milli / 1000))
milli = milli - grant * 1000
redis.call('HSET', KEYS[1], 'milli', milli, 'at', now)
redis.call('PEXPIRE', KEYS[1], 60000)
return grant
",
    )
});
