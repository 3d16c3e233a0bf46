#!/usr/bin/env bash
# Makes sure a Docker engine answers on /var/run/docker.sock, starting Debian's dockerd when none runs.
# Environments need it; everything else in Paddock works without it, so failure here is reported, not fatal,
# unless REQUIRE_DOCKER=1.
set -uo pipefail
say() { printf '\033[1m[docker]\033[0m %s\n' "$*"; }
if docker info >/dev/null 2>&1; then say "engine running"; exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then
  say "no dockerd installed: environment features stay disabled"; [ "${REQUIRE_DOCKER:-0}" = 1 ] && exit 1; exit 0
fi
log=${DOCKERD_LOG:-/tmp/paddock-dockerd.log}
say "starting dockerd (log: $log)"
# Paddock gives every workspace its own bridge network; Docker's default pools hold about 30 of them
# (a /16 each), so this engine hands out /24s instead: 256 networks.
args=(--default-address-pool base=10.213.0.0/16,size=24)
if [ "$(id -u)" -eq 0 ]; then setsid dockerd "${args[@]}" >"$log" 2>&1 < /dev/null &
else setsid sudo -n dockerd "${args[@]}" >"$log" 2>&1 < /dev/null & fi
for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && { say "engine running"; exit 0; }
  sleep 0.5
done
say "dockerd did not come up; see $log"
[ "${REQUIRE_DOCKER:-0}" = 1 ] && exit 1
exit 0
