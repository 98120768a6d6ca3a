# shellcheck shell=bash
# The option parsing every script under scripts/ shares: sourced, never run.
#
#   parse_options NAME HELP_LINES SPEC... -- "$@"
#
# SPEC is FLAG=VAR (the flag takes the next argument as its value, stored in the caller's VAR)
# or FLAG=VAR:VALUE (a switch: it stores VALUE in VAR). -h and --help print lines HELP_LINES
# (sed's range, e.g. 2,19) of the running script, its usage comment, and exit 0; any other
# argument exits 2 with "NAME: unknown option ARG (see --help)". A flag given twice keeps the
# last value. The variables are set at the caller's scope, so they keep the defaults set before
# the call unless a flag names them.
parse_options() {
  local _po_name=$1 _po_help=$2 _po_spec _po_flag _po_target _po_found
  local -a _po_specs=()
  shift 2
  while [ "$1" != -- ]; do _po_specs+=("$1"); shift; done
  shift
  while [ $# -gt 0 ]; do
    case "$1" in -h | --help) sed -n "${_po_help}p" "$0"; exit 0 ;; esac
    _po_found=0
    for _po_spec in "${_po_specs[@]}"; do
      _po_flag=${_po_spec%%=*} _po_target=${_po_spec#*=}
      [ "$1" = "$_po_flag" ] || continue
      if [[ $_po_target == *:* ]]; then
        printf -v "${_po_target%%:*}" '%s' "${_po_target#*:}"; shift
      else
        printf -v "$_po_target" '%s' "$2"; shift 2
      fi
      _po_found=1; break
    done
    [ "$_po_found" = 1 ] || { echo "$_po_name: unknown option $1 (see --help)" >&2; exit 2; }
  done
}
