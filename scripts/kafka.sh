#!/usr/bin/env bash
# Starts and stops Apache Kafka brokers in KRaft mode from the jars that
# scripts/install-engines.sh fetched, without a container engine. Each node
# is broker and controller at once, on two free ports of 127.0.0.1 chosen at
# the first start and kept for restarts; a cluster of three forms one
# controller quorum. Settings for tests: topics replicated as widely as the
# cluster allows, no delay before a group's first rebalance.
#
#   scripts/kafka.sh start DIR [BROKERS]   format and start BROKERS nodes (default 1) under DIR,
#                                          each ready; print the bootstrap servers
#   scripts/kafka.sh stop DIR              stop every node started under DIR
#   scripts/kafka.sh kill DIR N            kill node N at once (SIGKILL)
#   scripts/kafka.sh restart DIR N         start node N again on its data, ready
#
# Each node keeps its data, its log (`DIR/node-N/server.log`) and its pid
# file under DIR/node-N; a node that does not come up prints its log.
set -euo pipefail
cd "$(dirname "$0")/.."

command="${1:?usage: scripts/kafka.sh start|stop|kill|restart DIR [N]}"
directory="${2:?usage: scripts/kafka.sh start|stop|kill|restart DIR [N]}"
engine=Kafka log_name=server.log ready_line="Kafka Server started" start_timeout=120
# shellcheck source=scripts/engine-nodes.sh
source scripts/engine-nodes.sh
library=$(scripts/install-engines.sh | sed -n 's/^KAFKA_LIB=//p')
java_options=(-Xms128m -Xmx512m -XX:+UseG1GC -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1
    -XX:+ExitOnOutOfMemoryError -Djava.net.preferIPv4Stack=true)

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# configure N BROKERS VOTERS: writes node N's server.properties and log configuration.
configure() {
    local node_directory="$directory/node-$1" replication=$(($2 < 3 ? $2 : 3))
    mkdir -p "$node_directory"
    cat >"$node_directory/server.properties" <<PROPERTIES
process.roles=broker,controller
node.id=$1
controller.quorum.voters=$3
listeners=PLAINTEXT://127.0.0.1:$(cat "$node_directory/broker-port"),CONTROLLER://127.0.0.1:$(cat "$node_directory/controller-port")
advertised.listeners=PLAINTEXT://127.0.0.1:$(cat "$node_directory/broker-port")
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$node_directory/data
num.partitions=1
default.replication.factor=$replication
min.insync.replicas=$((replication > 1 ? 2 : 1))
offsets.topic.replication.factor=$replication
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$replication
transaction.state.log.min.isr=$((replication > 1 ? 2 : 1))
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPERTIES
    cat >"$node_directory/log4j2.properties" <<PROPERTIES
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $node_directory/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
PROPERTIES
}

# launch N: starts node N in the background and records its pid.
launch() {
    local node_directory="$directory/node-$1"
    java "${java_options[@]}" -Dlog4j2.configurationFile="$node_directory/log4j2.properties" \
        -cp "$library/*" kafka.Kafka "$node_directory/server.properties" >>"$node_directory/stdout.log" 2>&1 &
    echo $! >"$node_directory/pid"
}

case "$command" in
start)
    brokers="${3:-1}"
    voters=()
    for node in $(seq 1 "$brokers"); do
        mkdir -p "$directory/node-$node"
        free_port >"$directory/node-$node/broker-port"
        free_port >"$directory/node-$node/controller-port"
        voters+=("$node@127.0.0.1:$(cat "$directory/node-$node/controller-port")")
    done
    voters_list=$(IFS=,; echo "${voters[*]}")
    cluster_id=$(java -cp "$library/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
    for node in $(seq 1 "$brokers"); do
        configure "$node" "$brokers" "$voters_list"
        java -Dlog4j2.configurationFile="$directory/node-$node/log4j2.properties" -cp "$library/*" \
            kafka.tools.StorageTool format --cluster-id "$cluster_id" \
            --config "$directory/node-$node/server.properties" >"$directory/node-$node/format.log" 2>&1
    done
    for node in $(seq 1 "$brokers"); do launch "$node"; done
    for node in $(seq 1 "$brokers"); do ready "$node" 0; done
    for node in $(seq 1 "$brokers"); do echo "127.0.0.1:$(cat "$directory/node-$node/broker-port")"; done | paste -sd, -
    ;;
*) node_command "$@" ;;
esac
