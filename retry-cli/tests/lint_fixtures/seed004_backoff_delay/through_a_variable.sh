#!/usr/bin/env bash
# The wait comes from `backoff delay` through a variable assigned in the loop.
for attempt in 1 2 3 4; do
  git push && break
  wait_s=$(backoff delay --attempt "$attempt")
  sleep "$wait_s"
done
