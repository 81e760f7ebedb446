#!/bin/sh
# A variable the loop computes itself is its own wait.
for attempt in 1 2 3; do
  git push && break
  wait_s=$((attempt * 5))
  sleep "$wait_s"
done
# One assigned from `backoff delay` outside the loop is one number for every round.
wait_s=$(backoff delay --attempt 1)
for attempt in 1 2 3; do
  git push && break
  sleep "$wait_s"
done
