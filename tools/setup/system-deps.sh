#!/usr/bin/env bash
# Installs what the test run needs beyond npm packages, on a fresh Debian/Ubuntu machine, and only
# what is missing. Runs before `npm test` (the pretest script). Services given through the
# environment (KAFKA_BROKERS, REDIS_URL, DATABASE_URL) need nothing installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

say() { echo "[setup] $*" >&2; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@";
  elif command -v sudo >/dev/null; then sudo "$@";
  else say "need root to run: $*  (run it yourself, or set the service's URL variable)"; return 1; fi
}

missing_packages=()
need_package() { missing_packages+=("$1"); }

# With a Docker engine, testcontainers provides the services and nothing local is needed.
docker_engine=0
if command -v docker >/dev/null && timeout 5 docker info >/dev/null 2>&1; then docker_engine=1; fi
docker_answers() { ((docker_engine == 1)); }

if [[ -z "${REDIS_URL:-}" ]] && ! docker_answers && ! command -v redis-server >/dev/null; then
  need_package redis-server
fi
if [[ -z "${KAFKA_BROKERS:-}" ]] && ! docker_answers; then
  command -v java >/dev/null || need_package openjdk-17-jre-headless
  command -v mvn >/dev/null || need_package maven
fi
if [[ -z "${DATABASE_URL:-}" ]] && ! docker_answers \
  && ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null \
  && ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need_package postgresql
fi

# The engine's tests validate every generated tree with the real cf-promises.
command -v cf-promises >/dev/null || need_package cfengine3
# promtool (package prometheus) checks every service's /metrics as Prometheus itself reads them.
command -v promtool >/dev/null || need_package prometheus

# The dashboard's browser test drives the system's Chromium (playwright-core never downloads one).
command -v chromium >/dev/null || need_package chromium

if ((${#missing_packages[@]} > 0)); then
  command -v apt-get >/dev/null || { say "missing: ${missing_packages[*]}; install them (no apt-get here)"; exit 1; }
  say "installing ${missing_packages[*]} with apt-get"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_packages[@]}" >/dev/null
fi

if [[ -z "${KAFKA_BROKERS:-}" ]] && ! docker_answers; then
  say "Kafka broker jars: $(bash deploy/kafka/resolve.sh)"
fi
