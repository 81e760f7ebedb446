# A heartbeat: it waits every round whatever happens, and never decides. Not a retry.
while true; do
  date >> heartbeat.log
  sleep 60
done
