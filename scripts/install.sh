#!/usr/bin/env bash
# Install what shiftnet needs on Debian 12: the Debian packages it drives and
# a virtualenv at .venv/ in the checkout with shiftnet and its test tools.
#
# Shared by setup-and-run and setup-and-test. Quick when already done: apt is
# skipped when every package is installed, pip when .venv was built from the
# same pyproject.toml and constraints.txt (their sha256 is kept in
# .venv/.shiftnet-install-stamp). Python packages come at the exact versions of
# constraints.txt (scripts/lock-dependencies rewrites it).
#
# Environment: PYTHON (default python3), SHIFTNET_SKIP_APT=1 to never call apt.
# --with-debian-kubectl (setup-and-test): also unpack Debian 12's kubectl
# (kubernetes-client, 1.20) into .venv/debian-kubectl/, without installing it,
# so the tests can drive the fallback client beside the machine's own kubectl.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STAMP="$VENV/.shiftnet-install-stamp"
PYTHON="${PYTHON:-python3}"

# What shiftnet runs or tests against (see README.md, "What gets installed").
DEBIAN_PACKAGES=(
  haproxy etcd-server etcd-client nftables iptables iproute2
  wrk dnsperf dnsutils unbound nginx-light openssl
  python3 python3-venv ca-certificates procps curl
)
# Installed for their binaries only: shiftnet starts its own instances, so the
# Debian services must not hold ports 80/53/2379 behind its back.
DAEMONS=(haproxy etcd nginx unbound)

say() { printf 'install: %s\n' "$*" >&2; }
die() { printf 'install: error: %s\n' "$*" >&2; exit 1; }

missing_packages() {
  local p status
  for p in "${DEBIAN_PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
    [[ "$status" == "installed" ]] || printf '%s\n' "$p"
  done
  # The tests drive the real kubectl; a machine without one gets Debian's (an older
  # client, but one that speaks the same API).
  command -v kubectl >/dev/null || printf '%s\n' kubernetes-client
}

install_debian_packages() {
  if [[ "${SHIFTNET_SKIP_APT:-0}" == "1" ]]; then
    say "SHIFTNET_SKIP_APT=1: not checking Debian packages"
    return
  fi
  command -v dpkg-query >/dev/null || die "this script needs Debian (dpkg-query not found)"
  local missing
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    say "Debian packages: all present"
    return
  fi
  [[ "$(id -u)" == "0" ]] || die "run as root to install: ${missing[*]}"
  say "installing Debian packages: ${missing[*]}"
  # Keep the package scripts from starting the daemons (the Debian way: policy-rc.d).
  local policy=/usr/sbin/policy-rc.d own_policy=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
  fi
  local rc=0
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } || rc=$?
  ((own_policy)) && rm -f "$policy"
  ((rc == 0)) || die "apt-get failed (exit $rc)"
  if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    local d
    for d in "${DAEMONS[@]}"; do
      systemctl disable --now "$d" >/dev/null 2>&1 || true
    done
  fi
}

python_ok() {
  "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null
}

install_venv() {
  python_ok "$PYTHON" || die "$PYTHON is missing or older than 3.11"
  if [[ -x "$VENV/bin/python" ]] && ! python_ok "$VENV/bin/python"; then
    say "$VENV is broken: recreating it"
    rm -rf "$VENV"
  fi
  if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating $VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  local want have=""
  want="$(cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt" | sha256sum | cut -d' ' -f1)"
  [[ -f "$STAMP" ]] && have="$(cat "$STAMP")"
  if [[ "$want" == "$have" && -x "$VENV/bin/shiftnet" && -x "$VENV/bin/pytest" ]]; then
    say "Python packages: up to date (.venv matches pyproject.toml and constraints.txt)"
    return
  fi
  say "installing shiftnet and its test tools into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" -e "$ROOT[test]"
  printf '%s\n' "$want" >"$STAMP"
}

DEBIAN_KUBECTL="$VENV/debian-kubectl/usr/bin/kubectl"

install_debian_kubectl() {
  if [[ -x "$DEBIAN_KUBECTL" ]]; then
    say "Debian's kubectl: present ($DEBIAN_KUBECTL)"
    return
  fi
  if [[ "${SHIFTNET_SKIP_APT:-0}" == "1" ]]; then
    say "SHIFTNET_SKIP_APT=1: Debian's kubectl not unpacked (its tests will skip)"
    return
  fi
  local tmp
  tmp="$(mktemp -d)"
  chmod 0755 "$tmp"  # apt's download user writes here
  say "unpacking Debian's kubectl (kubernetes-client) into $VENV/debian-kubectl"
  if ! (cd "$tmp" && apt-get download -qq kubernetes-client 2>/dev/null); then
    apt-get update -qq && (cd "$tmp" && apt-get download -qq kubernetes-client) ||
      { rm -rf "$tmp"; die "apt-get download kubernetes-client failed"; }
  fi
  dpkg -x "$tmp"/kubernetes-client_*.deb "$VENV/debian-kubectl"
  rm -rf "$tmp"
  [[ -x "$DEBIAN_KUBECTL" ]] || die "kubernetes-client has no usr/bin/kubectl"
}

# shiftnet runs as many short processes (every CLI call, each component the
# tests start). Where PYTHONDONTWRITEBYTECODE is set, none of them would keep the
# bytecode of shiftnet's own (editable) source, and each would compile it again
# at start: about 0.2 s a process. Compile it once; unchanged files are skipped.
compile_source() {
  "$VENV/bin/python" -m compileall -q -j 0 "$ROOT/src" >/dev/null
}

install_debian_packages
install_venv
compile_source
if [[ "${1:-}" == "--with-debian-kubectl" ]]; then
  install_debian_kubectl
fi
