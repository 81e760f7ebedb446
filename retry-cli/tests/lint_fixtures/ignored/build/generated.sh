while ! git push; do sleep 2; done
