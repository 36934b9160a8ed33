#!/usr/bin/env bash
# Copies the Kafka broker jars (deploy/kafka/pom.xml) into a cache folder outside git and prints it.
# Idempotent: a complete cache for the pinned version is reused without running Maven.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"
cache_root="${POLICYGEN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/policygen}"
libs="$cache_root/kafka-$version/libs"
stamp="$libs/.complete"
pom_digest="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"

if [[ "$(cat "$stamp" 2>/dev/null)" != "$pom_digest" ]]; then
  command -v mvn >/dev/null || { echo "resolve.sh: Maven (mvn) is required to fetch the Kafka broker jars" >&2; exit 1; }
  command -v java >/dev/null || { echo "resolve.sh: Java 17 is required to run the Kafka broker" >&2; exit 1; }
  rm -rf "$libs"
  mkdir -p "$libs"
  echo "resolve.sh: resolving org.apache.kafka:kafka_2.13:$version from Maven Central into $libs" >&2
  mvn_log="$(mktemp)"
  if ! mvn -B -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$libs" >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    rm -f "$mvn_log"
    echo "resolve.sh: Maven could not resolve the Kafka broker jars (is Maven Central reachable?)" >&2
    exit 1
  fi
  rm -f "$mvn_log"
  echo "$pom_digest" >"$stamp"
fi
echo "$libs"
