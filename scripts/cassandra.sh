#!/usr/bin/env bash
# Starts and stops Apache Cassandra nodes from the jars that
# scripts/install-engines.sh fetched, without a container engine: node N
# listens on 127.0.0.N (CQL on port 9042, as the driver expects of every
# peer), and the first node is the seed. Settings for tests on small machines: no
# automatic snapshots, a capped commit log, small heaps, generous timeouts.
#
#   scripts/cassandra.sh start DIR [NODES] [FIRST]
#                                            start NODES nodes (default 1) under DIR on
#                                            127.0.0.FIRST (default 1) and the addresses after it,
#                                            each ready for CQL; print the contact points
#   scripts/cassandra.sh stop DIR            stop every node started under DIR
#   scripts/cassandra.sh kill DIR N          kill node N at once (SIGKILL)
#   scripts/cassandra.sh restart DIR N       start node N again on its data, ready for CQL
#
# Nodes are sized for tests (a 768 MiB heap, 64 MiB of memtables and of
# commit log); CASSANDRA_HEAP_MB=4096 sizes them for a benchmark (a quarter
# of the heap for memtables, as much again for the commit log), since with
# test sizes a node flushes and compacts all the time once a keyspace
# holds a few hundred thousand rows.
#
# Each node keeps its data, its log (`DIR/node-N/system.log`), its audit log
# of the statements it executed (`DIR/node-N/audit.log`, with
# CASSANDRA_AUDIT=yes) and its pid file under DIR/node-N; a node that does
# not come up prints its log.
set -euo pipefail
cd "$(dirname "$0")/.."

command="${1:?usage: scripts/cassandra.sh start|stop|kill|restart DIR [N]}"
directory="${2:?usage: scripts/cassandra.sh start|stop|kill|restart DIR [N]}"
engine=Cassandra log_name=system.log ready_line="Starting listening for CQL clients" start_timeout=180
# shellcheck source=scripts/engine-nodes.sh
source scripts/engine-nodes.sh
library=$(scripts/install-engines.sh | sed -n 's/^CASSANDRA_LIB=//p')

heap_mb="${CASSANDRA_HEAP_MB:-768}"
memtable_mb=$((heap_mb >= 2048 ? heap_mb / 4 : 64))
# The module exports and opens Cassandra needs on Java 17 (its conf/jvm17-server.options).
java_options=(
    -Xms256m "-Xmx${heap_mb}m" -XX:+UseG1GC -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1 -XX:+ExitOnOutOfMemoryError
    -Djava.net.preferIPv4Stack=true -Djdk.attach.allowAttachSelf=true -Dio.netty.tryReflectionSetAccessible=true
    -Dcassandra-foreground=yes -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000
    -Dcassandra.consistent.rangemovement=false
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED --add-exports java.base/java.lang.ref=ALL-UNNAMED
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
    --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED
)

audit=false
[ "${CASSANDRA_AUDIT:-}" = yes ] && audit=true

# configure N SEED: writes node N's cassandra.yaml and logback.xml.
configure() {
    local node_directory="$directory/node-$1"
    mkdir -p "$node_directory"
    cat >"$node_directory/cassandra.yaml" <<YAML
cluster_name: rights-test-$2
num_tokens: 8
allocate_tokens_for_local_replication_factor: 3
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.$2:7000"
listen_address: 127.0.0.$1
rpc_address: 127.0.0.$1
storage_port: 7000
native_transport_port: 9042
auto_bootstrap: false
auto_snapshot: false
data_file_directories: [$node_directory/data]
commitlog_directory: $node_directory/commitlog
saved_caches_directory: $node_directory/saved_caches
hints_directory: $node_directory/hints
cdc_raw_directory: $node_directory/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 8MiB
commitlog_total_space: ${memtable_mb}MiB
memtable_heap_space: ${memtable_mb}MiB
read_request_timeout: 20000ms
range_request_timeout: 20000ms
write_request_timeout: 20000ms
counter_write_request_timeout: 20000ms
truncate_request_timeout: 60000ms
request_timeout: 20000ms
# With CASSANDRA_AUDIT=yes, every statement clients execute, as they
# prepared it (values are not logged), in DIR/node-N/audit.log: the test
# suite checks that each statement the backend can send was executed by
# some test. Benchmarks leave it off, since it costs a log line each.
audit_logging_options:
  enabled: $audit
  logger:
    - class_name: FileAuditLogger
  included_categories: QUERY, DML, DDL
  excluded_keyspaces: system, system_schema, system_virtual_schema, system_auth, system_distributed, system_traces, system_views
YAML
    cat >"$node_directory/logback.xml" <<XML
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$node_directory/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <appender name="AUDIT" class="ch.qos.logback.core.FileAppender">
    <file>$node_directory/audit.log</file>
    <encoder><pattern>%msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra.audit" level="INFO" additivity="false"><appender-ref ref="AUDIT"/></logger>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
XML
}

# launch N: starts node N in the background and records its pid.
launch() {
    local node_directory="$directory/node-$1"
    java "${java_options[@]}" -Dcassandra.config="file://$node_directory/cassandra.yaml" \
        -Dlogback.configurationFile="$node_directory/logback.xml" -Dcassandra.storagedir="$node_directory" \
        -cp "$library/*" org.apache.cassandra.service.CassandraDaemon \
        >>"$node_directory/stdout.log" 2>&1 &
    echo $! >"$node_directory/pid"
}

case "$command" in
start)
    first="${4:-1}"
    last=$((first + ${3:-1} - 1))
    # The seed first, then the others at once: they join an empty ring and stream nothing.
    for node in $(seq "$first" "$last"); do configure "$node" "$first"; done
    launch "$first"
    ready "$first" 0
    for node in $(seq $((first + 1)) "$last"); do launch "$node"; done
    for node in $(seq $((first + 1)) "$last"); do ready "$node" 0; done
    seq "$first" "$last" | sed 's/^/127.0.0./; s/$/:9042/' | paste -sd, -
    ;;
*) node_command "$@" ;;
esac
