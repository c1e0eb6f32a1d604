# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A temporary root dpkg installs into, for the package tests: sourced, never run.
#
#   dpkg_root_make ROOT DEPENDS   makes ROOT with an empty dpkg database in which each package
#                                 of DEPENDS (a Depends field) is marked installed as this
#                                 machine's dpkg knows it, and ROOT/etc/dat.conf a copy of the
#                                 machine's /etc/dat.conf (libdapl2's conffile).
#   dpkg_root ROOT LOG ARGS...    dpkg --root=ROOT with maintainer scripts run without chroot
#                                 (they then work on ${DPKG_ROOT}/etc/dat.conf), logging to LOG
#                                 (dpkg.cfg would log to the machine's /var/log/dpkg.log).

dpkg_root_make() {
  local root=$1 depends=$2 admin=$1/var/lib/dpkg arch dependency
  arch=$(dpkg --print-architecture)
  mkdir -p "$root/etc" "$admin/info" "$admin/updates" "$admin/triggers"
  touch "$admin/available"
  for dependency in $(sed -e 's/([^)]*)//g' -e 's/|[^,]*//g' -e 's/,/ /g' <<<"$depends"); do
    dpkg-query -s "$dependency" >>"$admin/status" 2>/dev/null || { echo "$dependency is not installed here"; return 1; }
    echo >>"$admin/status"
    touch "$admin/info/$dependency.list" "$admin/info/$dependency:$arch.list"
  done
  if [[ -r /etc/dat.conf ]]; then
    sed '/^# softdat: begin/,/^# softdat: end/d' /etc/dat.conf >"$root/etc/dat.conf"
  else
    printf '# DAT v2.0\nofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""' >"$root/etc/dat.conf"
  fi
}

dpkg_root() {
  local root=$1 log=$2
  shift 2
  dpkg --root="$root" --log="$log" --force-script-chrootless "$@"
}
