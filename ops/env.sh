# ops/env.sh — sourced by the other ops scripts. As a non-root user, lets SwiftPM's git read
# package mirrors owned by another user (machines here serve github.com from root-owned copies,
# which git refuses as "dubious ownership"). git honours safe.directory only from its global or
# system file, so this run gets a global file of its own (git-ignored) that also includes yours.
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p .build-git
  printf '[safe]\n\tdirectory = *\n[include]\n\tpath = %s/.gitconfig\n' "${HOME:-/nonexistent}" > .build-git/gitconfig
  export GIT_CONFIG_GLOBAL="$PWD/.build-git/gitconfig"
fi
