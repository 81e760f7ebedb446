for attempt in 1 2 3; do
  git push && break
