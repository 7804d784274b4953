#!/usr/bin/env bash
# Fetches the real engines the suite runs against, with Maven and pinned
# versions, into a per-machine cache that later runs reuse: Apache
# Cassandra (the reference implementation of CQL, which ScyllaDB implements)
# and Apache Kafka (a KRaft broker and its tools). Nothing is downloaded
# while the tests run. Needs Java 17 and Maven.
#
#   scripts/install-engines.sh          # prints the two library directories
#
# Each engine is a directory of jars, `ENGINES/<name>-<version>/lib`, with
# a `complete` mark written last, so a broken fetch is fetched again.
# scripts/cassandra.sh and the Kafka tests start them from there.
set -euo pipefail

cassandra_version=5.0.6
kafka_version=4.1.1
log4j_version=2.24.3
engines="${LCC_ENGINES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rights-service-engines}"

command -v java >/dev/null || { echo "Java 17 is required to run the engines" >&2; exit 1; }
command -v mvn >/dev/null || { echo "Maven is required to fetch the engines" >&2; exit 1; }

# fetch NAME-VERSION DEPENDENCY...: copies each GROUP:ARTIFACT:VERSION and
# what it depends on into ENGINES/NAME-VERSION/lib.
fetch() {
    local target="$engines/$1"
    shift
    [ -f "$target/complete" ] && return 0
    rm -rf "$target"
    mkdir -p "$target"
    {
        echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        echo '<groupId>rights-service</groupId><artifactId>engine</artifactId><version>1</version><dependencies>'
        for coordinates in "$@"; do
            IFS=: read -r group artifact version <<<"$coordinates"
            echo "<dependency><groupId>$group</groupId><artifactId>$artifact</artifactId><version>$version</version></dependency>"
        done
        echo '</dependencies></project>'
    } >"$target/pom.xml"
    mvn --batch-mode --quiet -Dstyle.color=never --file "$target/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$target/lib" -DincludeScope=runtime >&2
    touch "$target/complete"
}

fetch "cassandra-$cassandra_version" "org.apache.cassandra:cassandra-all:$cassandra_version"
# The broker, its storage and topic tools, and a log4j binding for its slf4j logging.
fetch "kafka-$kafka_version" "org.apache.kafka:kafka_2.13:$kafka_version" \
    "org.apache.kafka:kafka-tools:$kafka_version" "org.apache.logging.log4j:log4j-slf4j-impl:$log4j_version"

echo "CASSANDRA_LIB=$engines/cassandra-$cassandra_version/lib"
echo "KAFKA_LIB=$engines/kafka-$kafka_version/lib"
