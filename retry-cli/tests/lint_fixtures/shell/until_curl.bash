until curl -fsS https://example.invalid/health; do
  sleep 3
done
