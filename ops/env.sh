# ops/env.sh — sourced by the other ops scripts. As a non-root user, lets SwiftPM's git read
# package mirrors owned by another user (machines here serve github.com from root-owned copies,
# which git otherwise refuses as "dubious ownership"). Applies to this run only.
if [ "$(id -u)" -ne 0 ]; then
  export GIT_CONFIG_COUNT=1
  export GIT_CONFIG_KEY_0=safe.directory
  export GIT_CONFIG_VALUE_0='*'
fi
