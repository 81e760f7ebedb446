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
redis.call('PUBLISH', ARGV[4], ARGV[5] .. ' ' .. ms .. ' ' .. ARGV[3])
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
