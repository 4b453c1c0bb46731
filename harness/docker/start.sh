# Container entry of every kafka-chaos node; the harness passes it as `sh -c`, so any image
# with Kafka's jars in /opt/kafka/libs (ours, or the official apache/kafka) can run it.
set -e
mkdir -p /etc/kafka /var/lib/kafka/data /var/lib/zookeeper
if [ -f /opt/kafka/node.properties ]; then  # settings installed after creation (a migration's phase)
  cp /opt/kafka/node.properties /etc/kafka/node.properties
else
  printf '%s\n' "$KCHAOS_PROPERTIES" > /etc/kafka/node.properties
fi
cat > /etc/kafka/log4j2.properties <<'LOG'
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
LOG
cat > /etc/kafka/log4j.properties <<'LOG'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
LOG
LIBS=/opt/kafka/libs
if [ -f /opt/kafka/release ]; then  # a rolling upgrade installed another release's jars beside the image's
  LIBS=$(cat /opt/kafka/release)
fi
CP="$LIBS/*:/opt/kafka/plugins/*"  # plugins: jars the harness mounts (a remote tier)
LOGOPTS="-Dlog4j2.configurationFile=/etc/kafka/log4j2.properties -Dlog4j.configuration=file:/etc/kafka/log4j.properties"
# a restarted container may come back with another node's old address: resolve peers afresh on every connection
# (the JVM otherwise caches a name for 30 s, and a controller sent one broker's requests to another)
DNS="-Dsun.net.inetaddr.ttl=0 -Dsun.net.inetaddr.negative.ttl=0"
JVM="${KCHAOS_JVM_OPTS:--Xms256m -Xmx768m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError}"
if [ -f /opt/kafka/kafka.jsa ] && [ $LIBS = /opt/kafka/libs ]; then  # the image's class-data archive of a broker start (see its Dockerfile)
  JVM="$JVM -XX:SharedArchiveFile=/opt/kafka/kafka.jsa"
fi
if [ "$KCHAOS_ROLE" = zookeeper ]; then
  exec java $JVM $LOGOPTS -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain /etc/kafka/node.properties
fi
DATA=/var/lib/kafka/data
FORMATTED=/opt/kafka/formatted
if [ -n "$KCHAOS_LAZYFS" ]; then  # the data directory on lazyfs, over /var/lib/kafka/disk (power-loss faults)
  mkdir -p /var/lib/kafka/disk
  rm -f /run/lazyfs.sock
  "$KCHAOS_LAZYFS" mount /var/lib/kafka/disk $DATA /run/lazyfs.sock &
  tries=0
  until [ -S /run/lazyfs.sock ]; do
    tries=$((tries + 1)); [ $tries -le 100 ] || { echo "lazyfs did not mount $DATA within 10 s" >&2; exit 1; }
    sleep 0.1
  done
fi
if { [ "$KCHAOS_ROLE" = kraft ] || [ "$KCHAOS_ROLE" = controller ]; } && [ ! -f $DATA/meta.properties ]; then
  # KCHAOS_FORMAT: a dynamic quorum's arguments (KIP-853), which the image's static format cannot give
  if [ -z "$KCHAOS_FORMAT" ] && [ -f $FORMATTED/bootstrap.checkpoint ]; then
    # the image's build-time format with this node's ids; a directory id is 16 random bytes, URL-safe base64
    NODE_ID=$(printf '%s\n' "$KCHAOS_PROPERTIES" | sed -n 's/^node\.id=//p')
    DIR_ID=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
    cp $FORMATTED/bootstrap.checkpoint $DATA/
    sed -e "s/^node\.id=.*/node.id=$NODE_ID/" -e "s/^cluster\.id=.*/cluster.id=$KCHAOS_CLUSTER_ID/" \
      -e "s/^directory\.id=.*/directory.id=$DIR_ID/" $FORMATTED/meta.properties > $DATA/meta.properties
  else
    java -Xmx256m -XX:TieredStopAtLevel=1 $LOGOPTS -cp "$CP" kafka.tools.StorageTool format \
      -t "$KCHAOS_CLUSTER_ID" -c /etc/kafka/node.properties $KCHAOS_FORMAT
  fi
fi
if [ -n "$KCHAOS_LAZYFS" ]; then  # what was set up before the broker starts is durable, as after `sync`
  "$KCHAOS_LAZYFS" ctl /run/lazyfs.sock sync > /dev/null
fi
exec java $JVM $DNS $LOGOPTS -cp "$CP" kafka.Kafka /etc/kafka/node.properties
